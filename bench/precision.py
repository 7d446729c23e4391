"""Per-token PLL difference of bfloat16 vs float32 weights (issue 12 §1), on AntiBERTy and en-small.

    python bench/precision.py --data ../shared/data --out docs/results/precision/README.md

Scores the same sequences with the model loaded in float32 and in bfloat16 (log-softmax and sums run in
float64 either way) and reports the per-token log-probability differences and the PLL-per-token
differences, and the time of each on this CPU. Antibodies: the first ``--n-antibodies`` heavy chains of
Thera-SAbDab; English: the first ``--n-sentences`` distinct SNLI test premises.
"""

from __future__ import annotations

import argparse
import csv
import platform
import shlex
import sys
import time
from pathlib import Path

import torch

import mlmprob
from mlmprob.data import shared_data_dir
from mlmprob.runtime.device import cpu_has_native_bf16


def _antibodies(data: Path, n: int) -> list[str]:
    with (data / "antibody" / "thera_sabdab.csv").open(newline="") as f:
        return [r["HC"].strip() for r in csv.DictReader(f) if r.get("HC", "").strip()][:n]


def _sentences(data: Path, n: int) -> list[str]:
    out, seen = [], set()
    with (data / "snli_test.tsv").open(newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            s = r["premise"].strip().lower()
            if s and s not in seen:
                seen.add(s)
                out.append(s)
            if len(out) == n:
                break
    return out


def measure(model: str, texts: list[str]) -> dict:
    res = {}
    for dt in ("float32", "bfloat16"):
        mlm = mlmprob.load_mlm(model, device="cpu", dtype=dt)
        enc = mlm.encode(texts)
        t0 = time.perf_counter()
        s = mlmprob.token_scores(mlm, enc.input_ids)
        res[dt] = (s, time.perf_counter() - t0)
    (a, ta), (b, tb) = res["float32"], res["bfloat16"]
    sel = a.positions
    d_tok = (b.log_prob - a.log_prob)[sel].abs()
    n = sel.sum(-1).double()
    d_ppt = ((b.pll - a.pll) / n).abs()
    return {
        "model": model,
        "sequences": len(texts),
        "tokens": int(sel.sum()),
        "tok_mean": float(d_tok.mean()),
        "tok_p99": float(d_tok.quantile(0.99)),
        "tok_max": float(d_tok.max()),
        "ppt_mean": float(d_ppt.mean()),
        "ppt_max": float(d_ppt.max()),
        "pll_per_token_fp32": float((a.pll / n).mean()),
        "t32": ta,
        "t16": tb,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(shared_data_dir() or "../shared/data"), help="shared data folder")
    ap.add_argument("--n-antibodies", type=int, default=8, help="heavy chains of Thera-SAbDab to score")
    ap.add_argument("--n-sentences", type=int, default=40, help="SNLI premises to score")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--out", default=None, help="write the markdown report here")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    data = Path(args.data)
    rows = [
        measure("antiberty", _antibodies(data, args.n_antibodies)),
        measure("en-small", _sentences(data, args.n_sentences)),
    ]
    lines = [
        "# bf16 vs fp32: per-token PLL differences",
        "",
        f"Command: `python {shlex.join(['bench/precision.py'] + (argv if argv is not None else sys.argv[1:]))}`",
        f"Machine: {platform.processor() or platform.machine()}, {args.threads} thread(s), torch {torch.__version__}, "
        f"native bf16 matrix units: {cpu_has_native_bf16()}.",
        "",
        "Weights in the given dtype; log-softmax and sums in float64 in both runs. |d| is the absolute "
        "difference bf16 - fp32 of each scored token's log q_t(x_t | x with t masked) (nats), and of each "
        "sequence's PLL per token.",
        "",
        "| model | sequences | tokens | mean abs d per token | p99 | max | mean abs d PLL/token | max | PLL/token (fp32) | time fp32 (s) | time bf16 (s) | bf16/fp32 time |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['sequences']} | {r['tokens']} | {r['tok_mean']:.4f} | {r['tok_p99']:.4f} | "
            f"{r['tok_max']:.4f} | {r['ppt_mean']:.4f} | {r['ppt_max']:.4f} | {r['pll_per_token_fp32']:.3f} | "
            f"{r['t32']:.1f} | {r['t16']:.1f} | {r['t16'] / r['t32']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    from cpu_info import emit

    return emit(text, args.out)


if __name__ == "__main__":
    sys.exit(main())
