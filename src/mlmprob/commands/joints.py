"""``mlmprob joints``: the pairwise-joint experiment (MLM, MRF-L, MRF, HCB, AG) over a data set.

Resumable: rerunning with the same options and ``--out`` computes only the missing pairs, then
rewrites ``report.md``, ``summary.json`` and ``distance.png``.
"""

from __future__ import annotations

import argparse
import sys

from ..argtypes import nonnegative_int, positive_float, positive_int
from ..batching import DEFAULT_BATCH_TOKENS
from ..joints.runner import SCHEMES, JointsConfig, load_records, run_joints, write_report


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "joints", help="pairwise joints from an MLM (Torroba Hennigen & Kim 2023): Table 1 and App. E",
        description="Random and contiguous pairs over a data set; for each pair the MLM, MRF-logit, MRF, HCB and AG "
                    "joints and their U-PPL, P-PPL, A-KL, G-KL. Writes OUT/pairs.jsonl (resumable), OUT/report.md, "
                    "OUT/summary.json and OUT/distance.png.")
    p.add_argument("--model", required=True, help="antiberty, sapiens-vh, sapiens-vl, or a local Hugging Face MLM folder")
    from ..cli import add_allow_pickle_arg
    add_allow_pickle_arg(p)
    p.add_argument("--data", required=True, help="CSV file (with --column) or a text file with one sequence per line")
    p.add_argument("--column", default="HC", help="CSV column holding the sequences (default HC)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--n-pairs", type=positive_int, default=500, help="pairs per scheme (default 500)")
    p.add_argument("--schemes", nargs="+", choices=SCHEMES, default=list(SCHEMES),
                   help="pair schemes: random positions, or contiguous (adjacent) positions (default: both)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the pair sampling (default 0)")
    p.add_argument("--top-k", type=positive_int, default=None,
                   help="approximation: restrict the candidate vocabulary to the k most probable ids (both masked)")
    p.add_argument("--pivot", choices=("mode", "mask"), default="mode", help="HCB pivot (default: mode of the MLM joint)")
    p.add_argument("--ag-steps", type=positive_int, default=None,
                   help="fixed AG steps (the paper: 50); default: to convergence")
    p.add_argument("--ag-tol", type=positive_float, default=1e-10,
                   help="AG convergence: total-variation change per step")
    p.add_argument("--ag-max-steps", type=positive_int, default=5000,
                   help="cap on AG steps when running to convergence (default 5000)")
    p.add_argument("--max-sequences", type=positive_int, default=None,
                   help="use only the first N sequences of the data")
    p.add_argument("--device", default="cpu", help="torch device, e.g. cpu, cuda, cuda:1 (default cpu)")
    p.add_argument("--dtype", default=None, help="float32 (default), bfloat16 or float16")
    p.add_argument("--batch-tokens", type=positive_int, default=DEFAULT_BATCH_TOKENS,
                   help=f"token budget of one forward sub-batch (default {DEFAULT_BATCH_TOKENS}; lower it if "
                        "memory runs out)")
    p.add_argument("--report-only", action="store_true", help="only rebuild the report from OUT/pairs.jsonl")
    p.add_argument("--quiet", action="store_true", help="no per-pair progress lines on stderr")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..joints.runner import RECORDS_FILE
    from pathlib import Path

    title = f"Pairwise joints: {args.model} on {Path(args.data).name}"
    if args.report_only:
        _, records = load_records(Path(args.out) / RECORDS_FILE)
        paths = write_report(records, args.out, title)
        print(paths["report"].read_text())
        return 0
    config = JointsConfig(model=args.model, data=args.data, column=args.column, schemes=tuple(args.schemes),
                          n_pairs=args.n_pairs, seed=args.seed, top_k=args.top_k, pivot=args.pivot,
                          ag_steps=args.ag_steps, ag_tol=args.ag_tol, ag_max_steps=args.ag_max_steps,
                          max_sequences=args.max_sequences)
    from ..models import load_mlm

    mlm = load_mlm(args.model, device=args.device, dtype=args.dtype, allow_pickle=args.allow_pickle)
    total = len(config.schemes) * config.n_pairs
    count = [0]

    def progress(rec: dict) -> None:
        count[0] += 1
        if not args.quiet:
            print(f"[{rec['scheme']} {rec['i'] + 1}/{config.n_pairs}] pair ({rec['a']}, {rec['b']}) K={rec['K']} "
                  f"AG steps {rec['ag_steps']} {rec['seconds']:.2f}s", file=sys.stderr)

    records = run_joints(mlm, config, args.out, batch_tokens=args.batch_tokens, progress=progress)
    if not args.quiet:
        print(f"{count[0]} new pairs, {len(records)}/{total} in {args.out}", file=sys.stderr)
    paths = write_report(records, args.out, title)
    print(paths["report"].read_text())
    print(f"plot: {paths['plot']}")
    return 0
