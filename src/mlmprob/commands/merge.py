"""``mlmprob merge``: join the outputs of ``--shard I/N`` runs into one file, each input id exactly once, in
input order. Parts of different runs (any stored option but the shard differs, how the rows were computed
included: dtype, forward, ...) are refused; the output appears only when complete (rerun after a kill)."""

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
    """The unit ids the run's input holds, from the command that wrote the parts (its ``expected_ids``);
    None when that command cannot say (then only duplicates and shards are checked)."""
    import importlib

    name = config.get("command")
    # ids follow from an input file, from --seq sequences, (variants --saturate) from the wild type alone,
    # or (joints) from the schemes and the pairs per scheme
    if not name or not (config.get("input") or config.get("seqs") or config.get("saturate") or name == "joints"):
        return None
    try:
        mod = importlib.import_module(f"{__package__}.{name}")
    except ModuleNotFoundError:
        return None
    fn = getattr(mod, "expected_ids", None)
    return None if fn is None else fn(config, limit)


def run(args) -> int:
    from ..runtime.merge import merge_parts

    n = merge_parts(args.out, args.parts, expected_ids=None if args.no_input_check else _input_ids)
    print(f"merged {n} rows from {len(args.parts)} part(s) -> {args.out}", file=sys.stderr)
    return 0
