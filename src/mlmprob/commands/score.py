"""``mlmprob score``: PLL / E_local / E_raw of every sequence in a file, streamed, sharded, written as it goes."""

from __future__ import annotations

import sys
from pathlib import Path

from ..argtypes import positive_int
from ..errors import MLMProbError
from ..fields import add_field_flags
from ..likelihood.spec import ScoreSpec  # the spec's fields: --per-token ... --seed, --pll, --correction
from .common import add_dedupe_arg, add_input_args, add_model_args, add_runtime_args

TSV_FIELDS = ("id", "n_tokens", "pll", "pll_per_token", "e_local", "e_raw")


def register(sub) -> None:
    p = sub.add_parser("score", help="pseudo-log-likelihood and raw-logit energy of sequences")
    formats = "text (one per line), FASTA, CSV/TSV, JSONL or Parquet, optionally .gz"
    stdin = "- for standard input (with --format unless it starts with '>' or '{')"
    p.add_argument("input", help=f"sequences: {formats}; {stdin}")
    add_input_args(p)
    add_dedupe_arg(p)
    add_model_args(p)
    p.add_argument("--out", "-o", help="output file, .jsonl, .tsv or .parquet (default: JSONL on stdout)")
    add_field_flags(p, ScoreSpec, ("per_token", "whole_word", "likelihood", "n_orders", "order", "per_order", "seed"))
    p.add_argument("--limit", type=positive_int, help="score only the first N records of the input (before --shard)")
    p.add_argument("--skip-invalid", action="store_true", help="skip records the tokenizer rejects, with a warning")
    add_field_flags(p, ScoreSpec, ("pll",))
    what = "the Spearman, mean and max absolute error of the estimate"
    check = f"with --pll one-pass: also score N random records of this run exactly and print {what}"
    p.add_argument("--check", type=positive_int, metavar="N", help=check)
    add_field_flags(p, ScoreSpec, ("correction",))
    add_runtime_args(p)
    p.set_defaults(func=run)


def expected_ids(config: dict, limit: int | None = None):
    """The record ids a run with this stored ``config`` covers, for ``mlmprob merge``'s input check."""
    from itertools import islice

    from .common import stored_inputs

    return islice((r.id for r in stored_inputs(config).records()), limit)


def run(args) -> int:
    from itertools import islice

    from ..likelihood.records import LOGLIK_FIELDS
    from ..runtime.command import StreamCommand, run_command, stored_config
    from ..runtime.unique import UniqueIds
    from ..runtime.writers import output_kind
    from ..scoring import ScoreJob
    from .common import input_file, model_spec, report_done, run_options, spec_of

    opts = run_options(args)
    spec = spec_of(ScoreSpec, args)  # --whole-word, --per-token, --likelihood, --order(s), --per-order, --seed, --pll
    if output_kind(args.out) == "tsv" and (spec.per_token or spec.per_order):
        flag = "per-token" if spec.per_token else "per-order"
        raise MLMProbError(f"--{flag} needs JSONL or Parquet output ({flag} lists do not fit a TSV row)")
    if args.check is not None and not spec.one_pass:
        raise MLMProbError("--check compares the one-pass estimate with exact PLL: use it with --pll one-pass")
    inputs = input_file(args)
    assert inputs is not None  # INPUT is a required argument
    unique = UniqueIds(args.dedupe)

    def units():
        return islice(unique(inputs.records()), args.limit)

    job_class = ScoreJob
    after: dict = {"dedupe": True} if args.dedupe else {}
    if spec.one_pass:
        from ..onepass.correction import correction_digest
        from ..onepass.job import OnePassScoreJob as job_class  # the same job, one-pass rows

        path = None if spec.correction is None else str(Path(spec.correction).resolve())
        after.update(pll="one_pass", correction=path, correction_sha256=correction_digest(args.model, spec.correction))
    job = job_class(model_spec=model_spec(args), spec=spec, skip_invalid=args.skip_invalid)
    columns = {"input": inputs.source, "format": inputs.format, "column": inputs.column, "id_column": inputs.id_column}
    config = stored_config("score", job.model_spec, spec, columns, after)
    fields = TSV_FIELDS + (LOGLIK_FIELDS if spec.loglik else ()) + (("method",) if spec.one_pass else ())
    where: dict = dict(fields=fields, input=inputs.path, empty=f"no sequences found in {inputs.shown}")
    done = run_command(StreamCommand(job, units, config, meta={"limit": args.limit}, **where), opts)
    if unique.warning():
        print(unique.warning(), file=sys.stderr)
    method = " (PLL method: one_pass, an estimate)" if spec.one_pass else ""
    if args.out:
        report_done(f"scored {done.written} sequences with {args.model}", done, args.out, opts.shard, tail=method)
    else:
        print(f"scored {done.written} sequences with {args.model} on {done.ran_on}{method}", file=sys.stderr)
    if args.check is not None:
        _check(args, job, done, opts, units)
    return 0


def _check(args, job, done, opts, units) -> None:
    """``--check N``: N random records of this run (this shard), scored exactly and compared."""
    from ..onepass.scoring import check

    shard = opts.shard
    records = [r for k, r in enumerate(units()) if shard.is_whole or k % shard.count == shard.index - 1]
    mlm = (done.state or job.load(opts.devices[0])).mlm
    print(check(mlm, records, args.check, correction=job.spec.correction).line(), file=sys.stderr)
