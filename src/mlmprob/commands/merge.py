"""``mlmprob merge``: join the outputs of ``--shard I/N`` runs into one file, each input id exactly once, in input
order. Parts of different runs (any stored option but the shard differs, how the rows were computed included: dtype,
forward, ...; another input or other model weights) are refused, and so are parts without their metadata (unless
--no-meta-check), unfinished or truncated parts (their row count is checked against their metadata) and .tsv parts
mixed with typed ones; the output appears only when complete (rerun after a kill). Parts made from standard input are
merged in shard order: their input is not read again."""

from __future__ import annotations

import sys

from ..errors import MLMProbError


def register(sub) -> None:
    short = "join shard outputs (JSONL/TSV/Parquet); fails on missing or duplicate ids"
    p = sub.add_parser("merge", help=short, description=__doc__)
    p.add_argument("parts", nargs="+", help="the shard outputs (their .meta.json files are read beside them)")
    p.add_argument("--out", "-o", required=True, help="merged output: .jsonl, .tsv or .parquet")
    still = "the parts' row counts, completion and identities are still checked; the merged metadata says so"
    no_input = f"do not re-read the input named in the parts' metadata to find ids missing from every part ({still})"
    p.add_argument("--no-input-check", action="store_true", help=no_input)
    no_meta = (
        "merge parts that have no PART.meta.json (not written by mlmprob, or their metadata removed): "
        "their run, shard, precision, input, row count and completion are then NOT checked, and the merged "
        "metadata says so (a later merge or --resume treats it as unchecked); without it such a part is refused"
    )
    p.add_argument("--no-meta-check", action="store_true", help=no_meta)
    p.set_defaults(func=run)


def _input_ids(config: dict, limit: int | None):
    """The unit ids the run's input holds, from the command that wrote the parts (its ``expected_ids``);
    None when that command cannot say (then only duplicates and shards are checked)."""
    import importlib
    import os

    name, source = config.get("command"), config.get("input") or ""
    # a run records standard input as ``-`` and a pipe by its name (``/dev/fd/63``): only a file is read again
    named = source != "-" and os.path.isabs(source) and not source.startswith(("/dev/", "/proc/"))
    if named and not os.path.exists(source):
        raise MLMProbError(
            f"the parts' input {source} no longer exists: the input ids missing from every part cannot be "
            "found; restore it, or merge with --no-input-check (the merged output then says it was not checked)"
        )
    if source and not (named and os.path.isfile(source)):
        return None  # standard input or a pipe: gone; the parts' identities stand in (never merge's own stdin)
    # ids follow from an input file, from --seq sequences, (variants --saturate) from the wild type alone,
    # (joints) from the schemes and the pairs per scheme, or (design) from the number of chains
    made = name in ("joints", "design")
    if not name or not (source or config.get("seqs") or config.get("saturate") or made):
        return None
    try:
        mod = importlib.import_module(f"{__package__}.{name}")
    except ModuleNotFoundError:
        return None
    fn = getattr(mod, "expected_ids", None)
    return None if fn is None else fn(config, limit)


def run(args) -> int:
    from pathlib import Path

    from ..runtime.merge import merge_parts
    from ..runtime.writers import meta_path

    unchecked = [p for p in args.parts if not meta_path(Path(p)).exists()] if args.no_meta_check else []
    ids, meta = None if args.no_input_check else _input_ids, not args.no_meta_check
    not_checked = ["the input's ids (--no-input-check)"] if args.no_input_check else ()
    n = merge_parts(args.out, args.parts, expected_ids=ids, require_meta=meta, not_checked=not_checked)
    if unchecked:
        parts = ", ".join(unchecked)
        print(f"warning: {len(unchecked)} part(s) merged without metadata, unchecked: {parts}", file=sys.stderr)
    print(f"merged {n} rows from {len(args.parts)} part(s) -> {args.out}", file=sys.stderr)
    return 0
