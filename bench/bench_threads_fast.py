"""What thread-count invariance costs now (issue 37, item 1): ``MLMPROB_THREAD_INVARIANT`` on against off, in
one process, side by side, with the GEMM peak of the same run.

    PYTHONPATH=src:bench python bench/bench_threads_fast.py --threads 1,2 --rounds 5 --length 48 \
        --out docs/results/precision/threads_fast.md

Models: AntiBERTy (real weights), a random-weight ESM-2 35M (12 x 480, ``bench_cpu.save_random_esm``) and a
random-weight BERT-base (12 x 768, FFN 3072, en-small's tokenizer, ``precision_all.save_random_bert_base``),
each through mlmprob's fused forward and transformers' own code (``fused=False``), float32, ``MKL_CBWR`` as
``import mlmprob`` sets it. Per (model, forward, thread count) the exact PLL of one random sequence of
``--length`` positions runs ``--rounds`` times with the switch on and off alternately (on off off on ...,
neither always first); the table gives the medians, the median and range of the per-pair ratios on/off,
and whether the invariant PLL gave the same bits at 1, 2, 3 and 4 threads. The GEMM peak (best square
2048 x 2048 float32 product, per wall second) is timed at each thread count between the rounds.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

# isort: off
import mlmprob  # first: MKL's strict mode (MKL_CBWR=AUTO,STRICT) is set only before torch is imported
import torch

# isort: on

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_lib as lib  # noqa: E402
from cpu_info import describe  # noqa: E402

SWITCH = "MLMPROB_THREAD_INVARIANT"
WORDS = "the of and to in is was for on as with by he at from his an were are which this be or has had".split()


def models(cache: Path) -> dict[str, tuple[str, str]]:
    """``{label: (load_mlm name or folder, alphabet of the random input: "protein" or "english")}``."""
    from bench_cpu import save_random_esm
    from precision_all import save_random_bert_base

    return {
        "AntiBERTy": ("antiberty", "protein"),
        "ESM-2 35M (random)": (str(save_random_esm("esm2-35M", cache)), "protein"),
        "BERT-base (random)": (str(save_random_bert_base(cache)), "english"),
    }


def sequence(mlm, kind: str, length: int) -> torch.Tensor:
    """Token ids of one random input of about ``length`` positions."""
    rng = random.Random(0)
    if kind == "protein":
        return mlm.encode(["".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(length))]).input_ids
    words = []
    while True:
        words.append(rng.choice(WORDS))
        ids = mlm.encode([" ".join(words)]).input_ids
        if ids.shape[1] >= length + 2:
            return ids


def _pll(mlm, ids, on: bool) -> tuple[float, torch.Tensor]:
    os.environ[SWITCH] = "1" if on else "0"
    t = time.perf_counter()
    out = mlmprob.pll(mlm, ids)
    return time.perf_counter() - t, out


def same_bits(mlm, ids) -> bool:
    """The invariant PLL at 1, 2, 3 and 4 threads, bit for bit."""
    before = torch.get_num_threads()
    outs = []
    for t in (1, 2, 3, 4):
        torch.set_num_threads(t)
        outs.append(_pll(mlm, ids, True)[1])
    torch.set_num_threads(before)
    return all(torch.equal(outs[0], o) for o in outs[1:])


def measure(mlm, ids, threads: list[int], rounds: int, peaks: dict) -> dict:
    """``{threads: {"on": [s], "off": [s]}}``, the modes alternated; GEMM peaks appended to ``peaks``."""
    res = {t: {"on": [], "off": []} for t in threads}
    for t in threads:
        torch.set_num_threads(t)
        _pll(mlm, ids, True), _pll(mlm, ids, False)  # warm-up
    for r in range(rounds):
        for t in threads if r % 2 == 0 else threads[::-1]:
            torch.set_num_threads(t)
            for i in range(2):
                on = (i + r) % 2 == 0
                res[t]["on" if on else "off"].append(_pll(mlm, ids, on)[0])
            peaks.setdefault(t, []).append(lib.matmul_peak("cpu", torch.float32, 2048, 3)[0])
    return res


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def run(a) -> list[str]:
    threads = [int(t) for t in a.threads.split(",")]
    cache = Path(a.cache)
    rows, peaks, load = [], {}, [os.getloadavg()[0]]
    for label, (name, kind) in models(cache).items():
        if a.models and not any(m.lower() in label.lower() for m in a.models.split(",")):
            continue
        for fused in (True, False):
            mlm = mlmprob.load_mlm(name, device="cpu", dtype="float32", fused=fused)
            ids = sequence(mlm, kind, a.length)
            res = measure(mlm, ids, threads, a.rounds, peaks)
            same = same_bits(mlm, ids)
            load.append(os.getloadavg()[0])
            for t in threads:
                on, off = res[t]["on"], res[t]["off"]
                ratios = [x / y for x, y in zip(on, off, strict=True)]
                rows.append(
                    f"| {label} | {'fused' if fused else 'transformers'} | {t} | {statistics.median(on):.3f} | "
                    f"{statistics.median(off):.3f} | {_spread(ratios)} | {'yes' if same else 'NO'} |"
                )
            print("\n".join(rows[-len(threads) :]), flush=True)
    os.environ.pop(SWITCH, None)
    head = [
        f"Machine: {describe()}; torch {torch.__version__}; MKL_CBWR={os.environ.get('MKL_CBWR', '')!r}.",
        f"Load average (1 min) over the run: median {statistics.median(load):.1f} "
        f"(range {min(load):.1f}-{max(load):.1f}) on {os.cpu_count()} CPUs.",
        "",
        "GEMM peak of this run (square 2048 float32, best of 3 per round, median over rounds): "
        + ", ".join(f"{t} thread(s) {statistics.median(p) / 1e9:.0f} GFLOP/s" for t, p in sorted(peaks.items())),
        "",
        f"Exact PLL of one random input of {a.length} positions, {a.rounds} on/off pairs per row:",
        "",
        "| model | forward | threads | on: median s | off: median s | on/off per pair: median (range) "
        "| on: same bits at 1-4 threads |",
        "|---|---|---|---|---|---|---|",
    ]
    return head + rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts timed")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--length", type=int, default=48, help="positions of the random input")
    p.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "mlmprob-bench-models"))
    p.add_argument("--models", default="", help="comma-separated parts of the model labels to run (default: all)")
    p.add_argument("--out", default=None, help="also write the report (markdown) here")
    a = p.parse_args(argv)
    lines = run(a)
    cmd = "PYTHONPATH=src:bench python bench/bench_threads_fast.py " + shlex.join(
        x for x in (argv if argv is not None else sys.argv[1:]) if x
    )
    text = "\n".join([f"    {cmd}", ""] + lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
