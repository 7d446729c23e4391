"""int8 ESM-2: mlmprob against esm-cpp int8, side by side in one run (issue 37, item 4).

    PYTHONPATH=src:bench:bench/.esmcpp python bench/bench_int8_esm.py --threads 1 --rounds 5 \
        --out docs/results/int8_attention.md

esm-cpp (PyPI ``esm-cpp==0.2.1``) is installed for this benchmark only (``pip install --no-deps
esm-cpp==0.2.1 --target bench/.esmcpp``), never a dependency of mlmprob. Random-weight ESM-2 8M / 35M /
150M (``bench_cpu.save_random_esm``), loaded by both engines from the same file. Engines, interleaved round
by round (order reversed every other round):

- ``esm-cpp int8``: its W8A8 INT8 (SmoothQuant, alpha 0.5, calibrated on 8 other chains, its own recipe);
- ``mlmprob int8``: ``load_mlm(..., dtype="int8")``, the fused forward, attention by torch's threaded
  ``scaled_dot_product_attention`` (float32 scores and softmax);
- ``mlmprob int8, every layer int8`` (``--compare all-int8``, the default): every encoder layer's linears
  in int8, the first ones included (int8 before ``int8_float_layers``);
- ``mlmprob int8, attention blocked`` (``--compare blocked``): the same as ``mlmprob int8`` with the
  float32-exact blocked attention of the thread-invariant path (what int8 ran before issue 37).

Workloads (``bench_cpu``'s): ``forward``, the logits of ``--n-forward`` antibody heavy chains; ``pll``,
``--pll-positions`` masked copies of one other chain. Errors against mlmprob float32 (fused forward, run
once): max |logit difference| on the forward workload; |PLL difference| and the mean and max per-position
|log-probability difference| on the PLL workload. Times: medians over the rounds; ratio = esm-cpp's time /
mlmprob's (above 1: mlmprob faster).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cpu import EsmCpp, Mlmprob, chains, save_random_esm  # noqa: E402
from cpu_info import describe  # noqa: E402

BLOCKED = "mlmprob int8, attention blocked"
ALL_INT8 = "mlmprob int8, every layer int8"


@contextmanager
def blocked_attention():
    """The fused forward's int8 attention by the blocked float32 kernel (the behaviour before issue 37)."""
    from mlmprob.models.fused import _Fused

    attend = _Fused._attend
    _Fused._attend = lambda self, q, k, v, mask, exact=True: attend(self, q, k, v, mask, True)
    try:
        yield
    finally:
        _Fused._attend = attend


def _errors(work: str, out, ref) -> str:
    pairs = list(zip(out, ref, strict=True))
    if work == "forward":
        return f"max abs logit diff {max(float((a.float() - b.float()).abs().max()) for a, b in pairs):.2e}"
    d = [abs(sum(a) - sum(b)) for a, b in pairs]
    tok = [abs(x - y) for a, b in pairs for x, y in zip(a, b, strict=True)]
    return f"PLL diff {max(d):.4f} nats; per position mean {statistics.mean(tok):.4f}, max {max(tok):.4f}"


def run_model(name: str, a, seqs: dict) -> list[str]:
    folder = save_random_esm(name, Path(a.weights))
    ref_eng = Mlmprob(folder, "float32")
    refs = {"forward": ref_eng.forward(seqs["forward"]), "pll": ref_eng.pll(seqs["pll"], a.pll_positions)}
    del ref_eng
    engines = {"esm-cpp int8": EsmCpp(folder, a.threads, seqs["calib"]), "mlmprob int8": Mlmprob(folder, "int8")}
    if a.compare == "blocked":
        engines[BLOCKED] = engines["mlmprob int8"]
    elif a.compare == "all-int8":
        from mlmprob.models.precision import quantize_linears

        engines[ALL_INT8] = Mlmprob(folder, "int8")
        quantize_linears(engines[ALL_INT8].mlm.model.esm)  # the layers int8_float_layers keeps float32

    def call(e, work):
        eng = engines[e]
        with blocked_attention() if e == BLOCKED else _nothing():
            return eng.forward(seqs[work]) if work == "forward" else eng.pll(seqs[work], a.pll_positions)

    times, outs = {}, {}
    for e in engines:
        call(e, "forward")  # warm-up
    for r in range(a.rounds):
        for work in ("forward", "pll"):
            for e in list(engines) if r % 2 == 0 else list(engines)[::-1]:
                t = time.perf_counter()
                outs[(e, work)] = call(e, work)
                times.setdefault((e, work), []).append(time.perf_counter() - t)
    rows = []
    for work in ("forward", "pll"):
        cpp = times[("esm-cpp int8", work)]
        for e in engines:
            ts = times[(e, work)]
            ratio = [c / t for c, t in zip(cpp, ts, strict=True)]
            rows.append(
                f"| {name} | {work} | {e} | {statistics.median(ts):.3f} | {statistics.median(ratio):.3f} "
                f"({min(ratio):.2f}-{max(ratio):.2f}) | {_errors(work, outs[(e, work)], refs[work])} |"
            )
    print("\n".join(rows), file=sys.stderr, flush=True)
    return rows


@contextmanager
def _nothing():
    yield


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="esm2-8M,esm2-35M,esm2-150M")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--n-forward", type=int, default=4)
    p.add_argument("--pll-positions", type=int, default=32)
    p.add_argument("--weights", default=os.path.join(tempfile.gettempdir(), "mlmprob_bench_cpu"))
    p.add_argument("--compare", choices=("all-int8", "blocked", "none"), default="all-int8")
    p.add_argument("--out")
    a = p.parse_args(argv)
    os.environ["ESM_NUM_THREADS"] = str(a.threads)  # esm-cpp's pool, read at its first load
    torch.set_num_threads(a.threads)
    import esm_cpp

    seqs = {"forward": chains(a.n_forward), "pll": chains(1, 50), "calib": chains(8, 100)}
    load = [os.getloadavg()[0]]
    rows = []
    for name in a.models.split(","):
        rows += run_model(name, a, seqs)
        load.append(os.getloadavg()[0])
    cmd = "PYTHONPATH=src:bench:bench/.esmcpp python bench/bench_int8_esm.py " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    text = "\n".join(
        [
            f"    {cmd}",
            "",
            f"Machine: {describe()}; esm-cpp ISA {esm_cpp.current_isa()}; {a.threads} thread(s) for both engines; "
            f"load average (1 min) median {statistics.median(load):.1f} (range {min(load):.1f}-{max(load):.1f}).",
            f"Forward: {len(seqs['forward'])} heavy chains ({sum(map(len, seqs['forward']))} residues); PLL: "
            f"{a.pll_positions} masked copies of one {len(seqs['pll'][0])}-residue chain; {a.rounds} rounds.",
            "",
            "| model | workload | engine | median s | esm-cpp / this: median (range) | error vs mlmprob float32 |",
            "|---|---|---|---|---|---|",
        ]
        + rows
    )
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
