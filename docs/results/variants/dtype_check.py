"""How much the `chain` and `*_loglik` raw scores of 2026-11-25 moved because they were computed in bfloat16.

Those chunks were written while `variants_data`'s loader used `load_mlm(name)`'s default dtype `auto`,
which is bfloat16 on that session's CPU (AVX512-BF16); every other stored score is float32. This recomputes
the first chunks in float32 with the runner's code and compares. Run from the repository root:

    python docs/results/variants/dtype_check.py --data ../shared/data > docs/results/variants/dtype_check.txt
"""

import argparse
import sys
from pathlib import Path

import torch

from experiments.variants_data_common import load_library, read_chunks, result_path
from experiments.variants_data_runner import Runner, parse_plan
from mlmprob.metrics import spearman


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--raw", default="docs/results/variants/raw")
    p.add_argument(
        "--chunks", default="sapiens-vh:chain:4,antiberty:chain:2,sapiens-vh:gdpa1_loglik:2,sapiens-vh:jain_loglik:2"
    )
    args = p.parse_args()
    torch.set_num_threads(1)
    data, raw = Path(args.data), Path(args.raw)
    runner = Runner(raw, data, load_library(data), log=lambda m: None)
    print(f"# {' '.join(sys.argv)}")
    print("stage | values | max abs diff | mean abs diff | Spearman(bf16, fp32)")
    for item in args.chunks.split(","):
        model, group, n = item.split(":")
        stage = parse_plan(f"{model}:{group}:all")[0]
        stored = read_chunks(result_path(raw, model, group))[: int(n)]
        old, new = [], []
        for c in stored:
            fresh = (runner._set_chunk if group.endswith("_loglik") else runner._library_chunk)(
                stage, c["start"], c["stop"]
            )
            if group == "chain":
                old += c["scores"]["chain"]
                new += fresh["scores"]["chain"]
            else:
                old += c["loglik"]
                new += fresh["loglik"]
        a, b = torch.tensor(old, dtype=torch.float64), torch.tensor(new, dtype=torch.float64)
        d = (a - b).abs()
        print(
            f"{model}:{group} | {len(a)} | {float(d.max()):.4f} | {float(d.mean()):.4f} | {float(spearman(a, b)):.5f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
