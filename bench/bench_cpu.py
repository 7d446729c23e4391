"""mlmprob vs esm-cpp (PyPI ``esm-cpp==0.2.1``, a C++ ESM-2 engine) on the same CPU, side by side (issue 21 §4).

    PYTHONPATH=src:bench/.esmcpp nice python bench/bench_cpu.py --threads 1 --rounds 2 \
        --out docs/results/bench_cpu.md

esm-cpp is installed only for this benchmark (never a dependency of mlmprob), e.g. ``pip install
esm-cpp==0.2.1 --target bench/.esmcpp`` or its wheel unzipped there. Random-weight ESM-2 8M / 35M / 150M
configurations (HF ``EsmForMaskedLM``, std-0.02 init, seed 0) are saved as safetensors *with* their rotary
``inv_freq`` buffers (esm-cpp refuses a file without them) and loaded by both engines from the same file.

Workloads, same sequences, same thread count, engines interleaved round by round (so machine load hits
both alike; the table gives medians over rounds and the ratio):
- ``forward``: logits of ``--n-forward`` antibody heavy chains (Thera-SAbDab, 80-140 residues), unmasked
  (esm-cpp's own workload: ``forward_batch``, packed; mlmprob: ``mlm.logits`` on the padded batch);
- ``pll``: exact PLL of ``--n-pll`` chains (one masked copy per residue; esm-cpp's own recipe from its
  ``eval/pppl.py``: ``forward_batch`` of the masked copies, log-softmax at the masked position;
  mlmprob: ``mlmprob.pll``). Masked marginals of all positions are the same forward reads (the full
  row at each masked position instead of one entry), so their time is the PLL time.
Precisions: esm-cpp fp32 and its W8A8 INT8 (SmoothQuant, alpha 0.5, calibrated on 8 other chains with its
``ActivationObserver``, 99.9th percentile: its own recipe, run in memory); mlmprob float32, int8
(``--dtype int8``) and bfloat16, through mlmprob's fused ESM forward (``mlmprob.models.fused``, the
default); ``--unfused`` adds precisions run through transformers' own ESM code (``fused=False``). The
reference: transformers' float32 forward (mlmprob float32 with ``fused=False``). Errors: max
|logit - logit_fp32_HF| on the forward workload and |PLL - PLL_fp32_HF| per chain, against it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

REF = "transformers float32 (HF fp32)"  # mlmprob with fused=False: transformers' own ESM code
CONFIGS = {  # ESM-2 shapes: layers, hidden, heads, intermediate
    "esm2-8M": (6, 320, 20, 1280),
    "esm2-35M": (12, 480, 20, 1920),
    "esm2-150M": (30, 640, 20, 2560),
}


def save_random_esm(name: str, root: Path) -> Path:
    """A random-weight ESM-2 configuration saved for both engines (safetensors with rotary buffers)."""
    import transformers as tf
    from safetensors.torch import save_file

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from conftest import ESM_VOCAB

    d = root / name
    if (d / "model.safetensors").is_file():
        return d
    d.mkdir(parents=True, exist_ok=True)
    layers, hidden, heads, inter = CONFIGS[name]
    (d / "vocab.txt").write_text("\n".join(ESM_VOCAB))
    tf.EsmTokenizer(str(d / "vocab.txt")).save_pretrained(str(d))
    torch.manual_seed(0)  # benchmark weights
    cfg = tf.EsmConfig(
        vocab_size=len(ESM_VOCAB),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=inter,
        max_position_embeddings=1026,
        position_embedding_type="rotary",
        pad_token_id=1,
        mask_token_id=32,
        token_dropout=True,
        emb_layer_norm_before=False,
        tie_word_embeddings=True,
    )
    model = tf.EsmForMaskedLM(cfg).eval()
    model.save_pretrained(str(d))
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    inv_freq = dict(model.named_buffers())["esm.rotary_embeddings.inv_freq"]  # transformers 5: one buffer
    for i in range(layers):  # the per-layer layout of transformers 4, which esm-cpp reads
        state[f"esm.encoder.layer.{i}.attention.self.rotary_embeddings.inv_freq"] = inv_freq.contiguous()
    state.setdefault("lm_head.decoder.weight", state["esm.embeddings.word_embeddings.weight"])
    save_file({k: v.clone() for k, v in state.items()}, str(d / "model.safetensors"), metadata={"format": "pt"})
    return d


def chains(n: int, skip: int = 0) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from onepass_data import antibody_sets

    return antibody_sets("H")["calibration"][skip : skip + n]


class EsmCpp:
    def __init__(self, folder: Path, threads: int, int8_calib: list[str] | None = None):
        import esm_cpp

        self.m = esm_cpp.Model.load_from_safetensors(str(folder / "model.safetensors"))
        if self.m.num_threads != threads:  # esm-cpp reads ESM_NUM_THREADS (set by main)
            raise SystemExit(f"error: esm-cpp runs {self.m.num_threads} threads, not {threads}")
        self.tok = esm_cpp.Tokenizer()
        self.mask = self.tok.mask_id
        if int8_calib is not None:
            obs = esm_cpp.ActivationObserver()
            for s in int8_calib:
                ids = self.ids(s)
                self.m.forward_with_observer(ids, np.ones_like(ids), obs)
            self.m.apply_smoothquant(obs.percentile(99.9), 0.5)
            self.m.quantize_weights()

    def ids(self, s):
        return np.asarray(self.tok.encode(s), dtype=np.int32)

    def forward(self, seqs):
        return [torch.from_numpy(np.asarray(x)) for x in self.m.forward_batch([self.ids(s) for s in seqs])]

    def pll(self, seqs, k):
        out = []
        for s in seqs:
            ids = self.ids(s)
            pos = range(1, min(len(ids) - 1, k + 1))
            copies = []
            for p in pos:
                c = ids.copy()
                c[p] = self.mask
                copies.append(c)
            logits = self.m.forward_batch(copies)
            lp = [
                float(torch.log_softmax(torch.from_numpy(np.asarray(lg[p], dtype=np.float64)), -1)[ids[p]])
                for p, lg in zip(pos, logits)
            ]
            out.append(lp)
        return out


class Mlmprob:
    def __init__(self, folder: Path, dtype: str, fused: bool = True):
        import mlmprob

        self.mp = mlmprob
        self.mlm = mlmprob.load_mlm(str(folder), device="cpu", dtype=dtype, fused=fused)

    def forward(self, seqs):
        enc = self.mlm.encode(seqs)
        logits = self.mlm.logits(enc.input_ids)
        lens = (enc.input_ids != self.mlm.pad_id).sum(1)
        return [logits[b, : int(n)] for b, n in enumerate(lens)]

    def pll(self, seqs, k):
        """Per sequence, the log-probabilities of its first ``k`` residues, each masked alone (exact PLL terms)."""
        ids = self.mlm.encode(seqs).input_ids
        pos = list(range(1, min(ids.shape[1] - 1, k + 1)))
        s = self.mp.token_scores(self.mlm, ids, pos)
        return [[float(x) for x in s.log_prob[b, pos]] for b in range(ids.shape[0])]


def run(args) -> str:
    torch.set_num_threads(args.threads)
    root = Path(args.weights)
    fwd_seqs, pll_seqs, calib = chains(args.n_forward), chains(args.n_pll, 50), chains(8, 100)
    load0 = os.getloadavg()
    lines = []
    for name in args.models.split(","):
        folder = save_random_esm(name, root)
        engines = {
            REF: Mlmprob(folder, "float32", fused=False),
            "mlmprob float32": Mlmprob(folder, "float32"),
            "esm-cpp fp32": EsmCpp(folder, args.threads),
        }
        if name in args.esmcpp_int8_models.split(","):
            engines["esm-cpp int8 (SmoothQuant)"] = EsmCpp(folder, args.threads, calib)
        engines["mlmprob int8"] = Mlmprob(folder, "int8")
        if name in args.bf16_models.split(","):
            engines["mlmprob bfloat16"] = Mlmprob(folder, "bfloat16")
        for dt in args.unfused.split(",") if args.unfused else ():
            engines[f"mlmprob {dt}, transformers' forward"] = Mlmprob(folder, dt, fused=False)
        works = ("forward", "pll") if name in args.pll_models.split(",") else ("forward",)
        times = {(e, w): [] for e in engines for w in works}
        for eng in engines.values():  # warm-up: first-call allocations and kernel selection
            eng.forward(fwd_seqs[:1])
        outs = {}
        rounds = args.rounds if CONFIGS[name][1] < args.big_hidden else 1
        for r in range(rounds):
            for w in works:
                for e, eng in engines.items() if r % 2 == 0 else reversed(list(engines.items())):
                    seqs = fwd_seqs if w == "forward" else pll_seqs
                    t0 = time.perf_counter()
                    outs[(e, w)] = eng.forward(seqs) if w == "forward" else eng.pll(seqs, args.pll_positions)
                    times[(e, w)].append(time.perf_counter() - t0)
                    print(f"{name} round {r} {w} {e}: {times[(e, w)][-1]:.2f} s", file=sys.stderr, flush=True)
        ref = REF
        for w in works:
            base = statistics.median(times[(ref, w)])
            for e in engines:
                t = statistics.median(times[(e, w)])
                if w == "forward":
                    err = max(float((a.float() - b.float()).abs().max()) for a, b in zip(outs[(e, w)], outs[(ref, w)]))
                    n_tok = sum(len(x) for x in outs[(ref, w)])
                    speed = f"{n_tok / t:.0f} tokens/s"
                    err_s = f"max abs logit diff {err:.2e}"
                else:
                    d = [abs(sum(a) - sum(b)) for a, b in zip(outs[(e, w)], outs[(ref, w)])]
                    tok = [abs(x - y) for a, b in zip(outs[(e, w)], outs[(ref, w)]) for x, y in zip(a, b)]
                    n_res = sum(len(x) for x in outs[(ref, w)])  # positions really scored
                    speed = f"{n_res / t:.1f} masked copies/s"
                    err_s = (
                        f"PLL diff mean {statistics.mean(d):.3f}, max {max(d):.3f} nats; per position "
                        f"mean {statistics.mean(tok):.4f}, max {max(tok):.4f}"
                    )
                lines.append(f"| {name} | {w} | {e} | {t:.2f} | {speed} | {base / t:.2f} | {err_s} | {rounds} |")
        print("\n".join(lines), file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import esm_cpp
    from cpu_info import describe

    isa = esm_cpp.current_isa()
    head = [
        f"Command: `{shlex.join(['python', 'bench/bench_cpu.py'] + sys.argv[1:])}`",
        f"Machine: {describe()}; esm-cpp ISA {isa}; {args.threads} thread(s) for both engines; "
        f"load average at start {load0[0]:.2f}, at end {load1[0]:.2f} (shared machine: 2 cores, other jobs running).",
        f"Sequences: forward {len(fwd_seqs)} Thera-SAbDab heavy chains ({sum(map(len, fwd_seqs))} residues); "
        f"PLL: {len(pll_seqs)} other chain(s) ({sum(map(len, pll_seqs))} residues), the first {args.pll_positions} (or all) "
        f"residues scored (one masked copy of the whole chain each). Medians over {args.rounds} interleaved rounds "
        f"(1 round for models of hidden size >= {args.big_hidden}), after one warm-up forward per engine.",
        "",
        "| model | workload | engine / precision | time (s) | throughput | speed vs transformers fp32 | error vs HF fp32 | rounds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join(head + lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="esm2-8M,esm2-35M,esm2-150M")
    ap.add_argument("--pll-models", default="esm2-8M,esm2-35M", help="models whose exact PLL is timed too")
    ap.add_argument("--bf16-models", default="esm2-8M", help="models also run by mlmprob in bfloat16")
    ap.add_argument(
        "--esmcpp-int8-models",
        default="esm2-8M,esm2-35M,esm2-150M",
        help="models also run by esm-cpp in int8 (its calibration runs 8 forwards in its slow path)",
    )
    ap.add_argument("--n-forward", type=int, default=8)
    ap.add_argument("--n-pll", type=int, default=1)
    ap.add_argument("--pll-positions", type=int, default=8, help="masked copies per PLL chain (first K residues)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--big-hidden", type=int, default=480, help="models this wide or wider run one round")
    ap.add_argument(
        "--unfused",
        default="",
        help="precisions also run through transformers' own ESM code (mlmprob fused=False), e.g. int8,bfloat16",
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--weights", default=os.path.join(tempfile.gettempdir(), "mlmprob_bench_cpu"))
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    os.environ["ESM_NUM_THREADS"] = str(args.threads)  # esm-cpp's thread pool (read at its first load)
    try:
        import esm_cpp  # noqa: F401
    except ImportError:
        print("error: esm-cpp is not installed (pip install esm-cpp==0.2.1, for this benchmark only)", file=sys.stderr)
        return 2
    text = run(args)
    from cpu_info import emit

    return emit(text, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
