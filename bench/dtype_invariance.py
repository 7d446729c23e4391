"""What changes a record's bits, per precision (issue 49, item 1): ``mlmprob score`` of the same sequences at
``--threads 1`` and ``2``, ``--workers 2``, two shards merged, and sub-batch budgets of 64 and 256 tokens, each
against the default one-process run; the largest difference of ``pll`` (nats) and how many rows differ, per
dtype. Everything in one run, on this machine (the CPU is printed: half precision depends on it).

    python bench/dtype_invariance.py --out docs/results/precision/dtype_invariance.md   # 10 minutes on 2 busy cores
    python bench/dtype_invariance.py --model sapiens-vh --n 24 --dtypes float32 bfloat16

docs/scale.md and docs/reliability.md quote its report.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

AA = "ACDEFGHIKLMNPQRSTVWY"
WAYS = {
    "--threads 2": (["--threads", "2"], []),
    "--workers 2": ([], ["--workers", "2"]),
    "--batch-tokens 64": ([], ["--batch-tokens", "64"]),
    "--batch-tokens 256": ([], ["--batch-tokens", "256"]),
    "2 shards merged": None,
}


def _score(inp: Path, out: Path, model: str, dtype: str, pre=(), post=()) -> dict[str, float]:
    cmd = [sys.executable, "-m", "mlmprob", *pre, "score", str(inp), "--model", model, "--dtype", dtype]
    subprocess.run([*cmd, "--out", str(out), "--no-progress", "--device", "cpu", *post], check=True)
    return {r["id"]: r["pll"] for r in map(json.loads, out.read_text().splitlines())}


def _shards(inp: Path, d: Path, model: str, dtype: str) -> dict[str, float]:
    parts = [d / f"part{i}.jsonl" for i in (1, 2)]
    for i, p in enumerate(parts, 1):
        _score(inp, p, model, dtype, ["--threads", "1"], ["--shard", f"{i}/2"])
    merged = d / "merged.jsonl"
    subprocess.run([sys.executable, "-m", "mlmprob", "merge", "--out", str(merged), *map(str, parts)], check=True)
    return {r["id"]: r["pll"] for r in map(json.loads, merged.read_text().splitlines())}


def _diff(a: dict, b: dict) -> tuple[float, int]:
    d = [abs(a[k] - b[k]) for k in a]
    return max(d), sum(x > 0 for x in d)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="antiberty")
    ap.add_argument("--n", type=int, default=40, help="random protein sequences (8-40 residues)")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--out", help="markdown report")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cpu_info import describe

    rng = random.Random(0)
    rows = ["| dtype | way (against one process at 1 thread, budget 4096) | max abs diff of pll (nats) | rows differing |",
            "|---|---|---|---|"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        inp = d / "in.fasta"
        inp.write_text("".join(f">s{i}\n{''.join(rng.choice(AA) for _ in range(rng.randint(8, 40)))}\n"
                               for i in range(args.n)))  # fmt: skip
        for dtype in args.dtypes:
            base = _score(inp, d / f"{dtype}-base.jsonl", args.model, dtype, ["--threads", "1"])
            for name, way in WAYS.items():
                out = d / f"{dtype}-{name.replace(' ', '_')}.jsonl"
                other = _shards(inp, d, args.model, dtype) if way is None else _score(
                    inp, out, args.model, dtype, ["--threads", "1", *way[0]] if not way[0] else way[0], way[1])  # fmt: skip
                diff, n = _diff(base, other)
                rows.append(f"| {dtype} | {name} | {diff:.3g} | {n} of {len(base)} |")
                print(rows[-1], flush=True)
                for p in [*d.glob("part*"), *d.glob("merged*")]:
                    p.unlink()
    report = "\n".join([
        "# What changes a record's bits, per precision",
        "",
        f"Command: `python bench/dtype_invariance.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        f"Machine: {describe()}; {os.cpu_count()} cores. Model: {args.model}; {args.n} random protein sequences of"
        " 8-40 residues.",
        "",
        *rows,
        "",
    ])  # fmt: skip
    print(report)
    if args.out:
        Path(args.out).write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
