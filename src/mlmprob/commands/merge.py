"""``mlmprob merge``: join the outputs of ``--shard I/N`` runs into one file, each input id exactly once."""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("merge", help="join shard outputs (JSONL/TSV/Parquet); fails on missing or duplicate ids",
                       description=__doc__)
    p.add_argument("parts", nargs="+", help="the shard outputs (their .meta.json files are read beside them)")
    p.add_argument("--out", "-o", required=True, help="merged output: .jsonl, .tsv or .parquet")
    p.add_argument("--no-input-check", action="store_true",
                   help="do not re-read the input named in the parts' metadata to find ids missing from every part")
    p.set_defaults(func=run)


def _input_ids(config: dict, limit: int | None):
    """The unit ids a run of ``config`` covers, re-derived from its input; None for a command it cannot tell."""
    from itertools import islice

    from ..runtime.inputs import iter_records

    command = config.get("command")
    if command == "joints":   # limit: pairs per scheme
        from ..joints.runner import pair_ids
        return None if limit is None else pair_ids(config.get("schemes") or [], limit)
    if command not in ("score", "infill") or not config.get("input"):
        return None
    records = iter_records(config["input"], config.get("format", "auto"), config.get("column"), config.get("id_column"))
    if command == "infill":
        from ..infill.stream import iter_gap_units
        return (u.id for u in iter_gap_units(records, config.get("gaps", "joint")))
    ids = (r.id for r in records)
    return ids if limit is None else islice(ids, limit)


def run(args) -> int:
    from ..runtime.merge import merge_parts

    n = merge_parts(args.out, args.parts, expected_ids=None if args.no_input_check else _input_ids)
    print(f"merged {n} rows from {len(args.parts)} part(s) -> {args.out}", file=sys.stderr)
    return 0
