"""``mlmprob score``: PLL / E_local / E_raw of every sequence in a file, streamed, sharded, written as it goes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..argtypes import positive_int
from ..errors import MLMProbError
from ..runtime.inputs import FORMATS

TSV_FIELDS = ("id", "n_tokens", "pll", "pll_per_token", "e_local", "e_raw")


def register(sub) -> None:
    p = sub.add_parser("score", help="pseudo-log-likelihood and raw-logit energy of sequences",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("input", help="sequences: text (one per line), FASTA, CSV/TSV, JSONL or Parquet, optionally .gz")
    p.add_argument("--format", default="auto", choices=FORMATS, help="input format (auto: by the file's suffix)")
    p.add_argument("--column", help="sequence column of a CSV/TSV/Parquet file or key of a JSONL object")
    p.add_argument("--id-column", help="identifier column (or JSONL key)")
    from ..cli import add_model_args, add_runtime_args
    add_model_args(p)
    p.add_argument("--out", "-o", help="output file, .jsonl, .tsv or .parquet (default: JSONL on stdout)")
    p.add_argument("--per-token", action="store_true", help="also write per-token log-probabilities and raw logits")
    p.add_argument("--whole-word", action="store_true", help="whole-word l2r PLL (Kauf & Ivanova 2023)")
    p.add_argument("--limit", type=positive_int, help="score only the first N records of the input (before --shard)")
    p.add_argument("--skip-invalid", action="store_true", help="skip records the tokenizer rejects, with a warning")
    p.add_argument("--pll", choices=("exact", "one-pass"), default="exact",
                   help="exact: one masked copy per position; one-pass: an estimate from one unmasked pass and the "
                        "model's fitted correction (mlmprob calibrate), ~L times faster; its rows say method one_pass")
    p.add_argument("--check", type=positive_int, metavar="N",
                   help="with --pll one-pass: also score N random records of this run exactly and print the "
                        "Spearman, mean and max absolute error of the estimate")
    p.add_argument("--correction", metavar="FILE",
                   help="with --pll one-pass: the correction file to use (from mlmprob calibrate --out) instead of "
                        "the one shipped or beside the model")
    add_runtime_args(p)
    p.set_defaults(func=run)


def expected_ids(config: dict, limit: int | None = None):
    """The record ids a run with this stored ``config`` covers, for ``mlmprob merge``'s input check."""
    from itertools import islice

    from ..runtime.inputs import iter_records

    ids = (r.id for r in iter_records(config["input"], config.get("format", "auto"), config.get("column"),
                                      config.get("id_column")))
    return ids if limit is None else islice(ids, limit)


def run(args) -> int:
    from itertools import islice

    from ..runtime import describe, iter_records, parse_shard
    from ..runtime.engine import loader_for, run_stream
    from ..runtime.inputs import count_records
    from ..runtime.pool import parse_devices
    from ..runtime.writers import open_writer, output_kind
    from ..scoring import ScoreJob
    from ..cli import model_dtype_label

    if args.limit is not None and args.limit < 1:
        raise MLMProbError(f"--limit must be >= 1, got {args.limit}")
    shard = parse_shard(args.shard)
    devices = parse_devices(args.workers, args.devices)
    if devices == ["auto"]:
        devices = [args.device]
    kind = output_kind(args.out)
    one_pass = args.pll == "one-pass"
    if args.check is not None and not one_pass:
        raise MLMProbError("--check compares the one-pass estimate with exact PLL: use it with --pll one-pass")
    if args.correction is not None and not one_pass:
        raise MLMProbError("--correction is the one-pass correction: use it with --pll one-pass")
    if one_pass and (args.per_token or args.whole_word):
        raise MLMProbError("--pll one-pass gives per-sequence scores only (no --per-token, no --whole-word)")
    if kind == "tsv" and args.per_token:
        raise MLMProbError("--per-token needs JSONL or Parquet output (per-token lists do not fit a TSV row)")

    def units():
        recs = iter_records(args.input, args.format, args.column, args.id_column)
        return recs if args.limit is None else islice(recs, args.limit)

    first = next(iter(units()), None)  # fail fast on bad input, before a model is loaded
    if first is None:
        raise MLMProbError(f"no sequences found in {args.input}")
    config = {"command": "score", "model": args.model, "input": str(Path(args.input).resolve()),
              "format": args.format, "column": args.column, "id_column": args.id_column,
              "whole_word": args.whole_word, "per_token": args.per_token, "shard": str(shard)}
    if one_pass:
        config["pll"] = "one_pass"
        config["correction"] = None if args.correction is None else str(Path(args.correction).resolve())
    # the output is claimed (lock, resume check) before the model loads: a second writer is refused at once
    fields = TSV_FIELDS + (("method",) if one_pass else ())
    writer = open_writer(args.out, resume=args.resume, config=config, fields=fields, part_rows=args.part_rows)
    from ..onepass.scoring import OnePassScoreJob
    extra = {"correction": args.correction} if one_pass else {}
    job = (OnePassScoreJob if one_pass else ScoreJob)(**extra, model=args.model, dtype=args.dtype, allow_pickle=args.allow_pickle, whole_word=args.whole_word, per_token=args.per_token,
                   batch_tokens=args.batch_tokens, skip_invalid=args.skip_invalid)
    load, mlm = loader_for(job.load, devices, args.engine, writer)
    if mlm is not None:
        ran_on = describe(mlm.device, mlm.dtype)
    else:
        where = "Ray actors" if args.engine == "ray" else f"{len(devices)} x {devices[0]}"
        ran_on = f"{where} {model_dtype_label(args.dtype, devices[0])}"
    total = None
    if not args.no_progress and Path(args.input).stat().st_size < (256 << 20):
        total = count_records(args.input, args.format, args.column, args.id_column)
        total = min(total, args.limit or total)
        total = len(range(shard.index - 1, total, shard.count))
    with writer:
        summary = run_stream(load, job.run, units(), writer, shard=shard, devices=devices, engine=args.engine,
                             ray_address=args.ray_address, total=total, progress=not args.no_progress,
                             meta={"limit": args.limit})
    method = " (PLL method: one_pass, an estimate)" if one_pass else ""
    for rid, why in summary.skipped:
        print(f"warning: skipped record {rid!r}: {why}", file=sys.stderr)
    if args.out:
        print(f"scored {summary.written} sequences with {args.model} on {ran_on} -> {args.out}"
              + (f" ({summary.already} already there)" if summary.already else "")
              + (f" (shard {shard})" if not shard.is_whole else "") + method, file=sys.stderr)
    else:
        print(f"scored {summary.written} sequences with {args.model} on {ran_on}{method}", file=sys.stderr)
    if args.check is not None:
        _check(args, job, mlm, devices, units, shard)
    return 0


def _check(args, job, mlm, devices, units, shard) -> None:
    """``--check N``: N random records of this run (this shard), scored exactly and compared."""
    from ..onepass.scoring import check

    records = [r for k, r in enumerate(units()) if shard.is_whole or k % shard.count == shard.index - 1]
    mlm = mlm if mlm is not None else job.load(devices[0])
    print(check(mlm, records, args.check, batch_tokens=args.batch_tokens, correction=job.correction).line(),
          file=sys.stderr)
