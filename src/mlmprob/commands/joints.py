"""``mlmprob joints``: the pairwise-joint experiment (MLM, MRF-L, MRF, HCB, AG) over a data set.

Always resumable: rerunning with the same options and ``--out`` computes only the missing pairs (a larger
``--n-pairs`` adds pairs), then rewrites ``report.md``, ``summary.json`` and ``distance.png``. The unit is a pair (id
``SCHEME/I``); ``--shard I/N`` takes pairs ``k`` with ``k mod N = I - 1`` of the full deterministic list (the schemes
interleaved pair by pair), ``--workers``/``--devices`` compute pairs in worker processes (records are written in pair
order). Join shards with ``mlmprob merge --out ALL/pairs.jsonl S1/pairs.jsonl S2/pairs.jsonl``, then report with
``mlmprob joints --report-only --out ALL``.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import MLMProbError
from ..fields import add_field_flags
from ..joints.spec import JointsSpec
from .common import add_model_args, add_runtime_args, input_file, model_spec, out_folder, run_options, spec_of

#: The flags made from :class:`JointsSpec`'s fields after ``--out`` (``--format`` and ``--column`` come first).
SPEC_FLAGS = ("n_pairs", "schemes", "seed", "top_k", "pivot", "ag_steps", "ag_tol", "ag_max_steps", "max_sequences")


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "joints",
        help="pairwise joints from an MLM (Torroba Hennigen & Kim 2023): Table 1 and App. E",
        description="Random and contiguous pairs over a data set; for each pair the MLM, MRF-logit, MRF, HCB and AG "
        "joints and their U-PPL, P-PPL, A-KL, G-KL. Writes OUT/pairs.jsonl, OUT/report.md, "
        "OUT/summary.json and OUT/distance.png. " + __doc__.split("\n\n", 1)[1].replace("``", ""),
    )
    add_model_args(p)
    p.add_argument("--data", help="sequences: text (one per line), FASTA, CSV/TSV, JSONL or Parquet, optionally .gz")
    add_field_flags(p, JointsSpec, ("format", "column"), present=("format",))  # read before the spec is made
    p.add_argument("--out", required=True, help="output folder")
    add_field_flags(p, JointsSpec, SPEC_FLAGS)
    p.add_argument("--report-only", action="store_true", help="only rebuild the report from OUT/pairs.jsonl")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary line on stderr")
    add_runtime_args(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from pathlib import Path

    from ..joints.job import RECORDS_FILE, JointsJob, load_records, run_pairs
    from ..joints.report import write_report

    out_folder(args.out)
    if args.report_only:
        header, records = load_records(Path(args.out) / RECORDS_FILE)
        if not records:
            raise MLMProbError(f"no pair records in {Path(args.out) / RECORDS_FILE}")
        data = args.data or (header or {}).get("data") or "?"
        model = (header or {}).get("model") or args.model
        paths = write_report(records, args.out, f"Pairwise joints: {model} on {Path(data).name}")
        print(paths["report"].read_text())
        return 0
    if args.data is None:
        raise MLMProbError("--data is required (the sequences to draw pairs from), unless --report-only")
    opts = run_options(args)
    shard = opts.shard
    data = input_file(args, "data")  # stdin or a pipe: read once, here
    assert data is not None  # --data was checked above
    config = spec_of(JointsSpec, args, format=data.format)  # --column, --format, --schemes, --n-pairs, ...
    job = JointsJob(config, model_spec=model_spec(args), data=str(args.data), data_path=data.path)
    new: list[dict] = []  # the pairs computed by this run
    records = run_pairs(job, replace(opts, progress=opts.progress and not args.quiet), progress=new.append)
    total, part = shard.size(len(config.schemes) * config.n_pairs), "" if shard.is_whole else f" (shard {shard})"
    if not args.quiet:
        print(f"{len(new)} new pairs, {len(records)}/{total} in {args.out}{part}", file=sys.stderr)
    paths = write_report(records, args.out, f"Pairwise joints: {args.model} on {Path(args.data).name}{part}")
    print(paths["report"].read_text())
    print(f"plot: {paths['plot']}")
    return 0


def expected_ids(config: dict, limit: int | None = None):
    """The pair ids a run with this stored ``config`` covers (``limit``: pairs per scheme), for ``mlmprob merge``."""
    from ..joints.job import pair_ids

    return None if limit is None else pair_ids(config.get("schemes") or [], limit)
