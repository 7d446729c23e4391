"""``mlmprob variants``: variant-effect scores of mutants of one wild type (ProteinGym-style mutant strings, full
mutated sequences, or ``--saturate``: every single mutant), streamed, sharded, resumable; ``--evaluate`` scores them
against a label column."""

from __future__ import annotations

import sys
from pathlib import Path

from ..argtypes import checked, positive_int, probability
from ..defaults import VARIANTS_MODEL, VARIANTS_MODEL_WHY
from ..errors import MLMProbError
from ..fields import add_field_flags
from ..jsonl import dumps
from ..numbering import cdr_span
from ..runtime.inputs import FORMATS
from ..settings import check_seed
from ..variants.spec import DEFAULT_METHODS, SATURATE_METHODS, VariantsSpec
from .common import add_dedupe_arg, add_model_args, add_runtime_args, input_file, model_spec, run_options, spec_of
from .regions import add_cdr_args, cdr_config, resolve_cdr

LONG_HELP = """A wild type longer than the model's window: protein models that read long rows through windows (ESM-2
and other Hugging Face protein models) read each position in the window centred on it; a model with a hard length limit
(sapiens, antiberty) scores each variant in the window of W residues centred on the middle of its mutated sites, kept
inside the protein (column `window`: its first residue)."""


def register(sub) -> None:
    short = "variant-effect scores of mutants of a wild type (ProteinGym CSV, sequences, or --saturate)"
    p = sub.add_parser("variants", help=short, description=__doc__, epilog=LONG_HELP)
    gym = "ProteinGym-style CSV/TSV (a 'mutant' column like A23C:D45E, 1-based)"
    full = "full mutated sequences of the wild type's length (CSV/TSV column, FASTA, text, JSONL, Parquet)"
    p.add_argument("input", nargs="?", help=f"{gym}, or {full}")
    p.add_argument("--wild-type", required=True, metavar="SEQ|FASTA", help="the wild-type sequence, or a file with it")
    files = "OUT.heatmap.png, OUT.heatmap.csv (L x 20) and OUT.saturation.csv"
    sat = f"score every single mutant of the wild type (19 x L rows) and also write {files}"
    p.add_argument("--saturate", action="store_true", help=sat)
    add_cdr_args(p, "with --saturate, mutate only the residues of this region of the wild type")
    add_field_flags(p, VariantsSpec, ("methods", "chain_orders", "chain_seed", "offset"))  # the spec's fields
    p.add_argument("--format", default="auto", choices=FORMATS, help="input format (auto: by the file's suffix)")
    p.add_argument("--mutant-column", default="mutant", help="mutant-string column of a CSV/TSV input")
    column = "full-sequence column (default: mutated_sequence/sequence/seq when there is no mutant column)"
    p.add_argument("--column", help=column)
    p.add_argument("--id-column", help="row id column (default: the mutant string; full sequences: row<N>)")
    p.add_argument("--label", metavar="COL", help="label column (measured fitness, or 0/1) for --evaluate")
    stats = "Spearman, AUROC (0/1 labels), NDCG and top recall per method with bootstrap intervals"
    p.add_argument("--evaluate", action="store_true", help=f"after scoring, print {stats}; write OUT.eval.json")
    p.add_argument("--top", type=probability, default=0.1, help="top fraction for NDCG and recall")
    p.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap resamples")
    seed_help = "seed of the bootstrap's torch.Generator (at most 2**63 - 1)"
    p.add_argument("--seed", type=checked(int, check_seed), default=0, help=seed_help)
    add_model_args(p, default=VARIANTS_MODEL, why=VARIANTS_MODEL_WHY)
    p.add_argument("--out", "-o", help="output file, .jsonl, .tsv or .parquet (default: JSONL on stdout)")
    p.add_argument("--limit", type=positive_int, help="only the first N rows of the input (before --shard)")
    p.add_argument("--skip-invalid", action="store_true", help="skip (and count) rows that do not fit the wild type")
    add_dedupe_arg(p)
    add_runtime_args(p)
    p.set_defaults(func=run)


def _units(config: dict, limit: int | None = None, label: str | None = None, path: str | None = None, unique=None):
    """The units of a run with this ``config`` (``path``: where its input is read from now, e.g. stdin's copy)."""
    from itertools import islice

    from ..runtime.unique import UniqueIds
    from ..variants.units import iter_units, saturation_units

    if config["saturate"]:
        units = saturation_units(config["wild_type"], config["offset"])
        if "cdr_span" in config:  # --cdr: the single mutants inside the region
            lo, hi = (i + config["offset"] for i in config["cdr_span"])
            units = (u for u in units if u.mutant is not None and lo <= int(u.mutant[1:-1]) < hi)
    else:
        unique = unique or UniqueIds(config.get("dedupe", False), what="row")
        columns = {k: config[k] for k in ("mutant_column", "column", "id_column")}
        units = unique(iter_units(path or config["input"], fmt=config["format"], label=label, **columns))
    return islice(units, limit)


def expected_ids(config: dict, limit: int | None = None):
    """The row ids a run with this stored ``config`` covers (the input's, or ``--saturate``'s single mutants), for
    ``mlmprob merge``'s input check."""
    return (u.id for u in _units(config, limit))


def variants_spec(args, **given):
    """The spec of ``mlmprob variants``' arguments: ``--methods`` left out (or None) is the defaults (``--saturate``'s
    with it)."""
    if "methods" not in given and getattr(args, "methods", None) is None:
        given["methods"] = SATURATE_METHODS if getattr(args, "saturate", False) else DEFAULT_METHODS
    return spec_of(VariantsSpec, args, **given)


def _config(args, wild_type: str, spec):
    """The run's stored configuration and its input file (None with ``--saturate``)."""
    from ..runtime.command import stored_config

    if (args.input is not None) == args.saturate:
        raise MLMProbError("give an input file, or --saturate (not both)")
    if args.saturate and args.limit is not None:  # refused before any work, not after it
        raise MLMProbError(
            "--limit does not go with --saturate: its heatmap and tables need every single mutant "
            "(--cdr mutates one region only)"
        )
    region = _region(args, wild_type)
    inputs = None if args.saturate else input_file(args)
    # offset and methods: the spec's two settings stored here (stored_config), chain's after the input
    before = {"wild_type": wild_type, "offset": ..., "methods": ..., "saturate": args.saturate}
    before.update({"dedupe": True} if args.dedupe and not args.saturate else {})
    before.update(input=inputs and inputs.source, format=inputs.format if inputs else args.format)
    before.update(mutant_column=args.mutant_column, column=args.column, id_column=args.id_column)
    return stored_config("variants", model_spec(args), spec, before, region), inputs


def _region(args, wild_type: str) -> dict:
    """``--cdr``'s configuration keys: the region, its definition and its 0-based residue span in the wild type."""
    region = resolve_cdr(args)
    if region is None:
        return {}
    if not args.saturate:
        raise MLMProbError("--cdr restricts --saturate to a region; an input file names its own mutants")
    return {**cdr_config(region), "cdr_span": list(cdr_span(wild_type, *region))}


def run(args) -> int:
    from ..metrics.ranking import MAX_BOOT
    from ..runtime.command import StreamCommand, run_command
    from ..runtime.unique import UniqueIds
    from ..variants.stream import VariantsJob
    from ..variants.units import read_wild_type
    from .common import report_done

    wild_type = read_wild_type(args.wild_type)
    spec = variants_spec(args)  # --methods (the defaults of --saturate with it), --offset, --chain-*
    methods = spec.methods
    config, inputs = _config(args, wild_type, spec)
    path = None if inputs is None else inputs.path
    unique = UniqueIds(args.dedupe, what="row")
    if args.evaluate and not args.label:
        raise MLMProbError("--evaluate needs --label COL (the measured values)")
    if args.evaluate and args.n_boot > MAX_BOOT:  # refused before the scoring, not after it
        raise MLMProbError(f"--n-boot must be at most {MAX_BOOT:,} (every resample's value is kept), got {args.n_boot}")
    if (args.evaluate or args.saturate) and not args.out:
        flag = "--evaluate" if args.evaluate else "--saturate"
        raise MLMProbError(f"{flag} needs --out (it reads the finished output)")
    labels = _labels(args, config, path) if args.evaluate else None  # a bad label: refused before the scoring
    opts = run_options(args)
    job = VariantsJob(model_spec=model_spec(args), wild_type=wild_type, spec=spec, skip_invalid=args.skip_invalid)
    how: dict = dict(fields=("id", "mutant", "n_mutations", "window", *methods), input=path, meta={"limit": args.limit})
    how.update(empty=f"no rows found in {args.input}", unit_name="variant", chunk_size=256, skip_label="row ")
    command = StreamCommand(job, lambda: _units(config, args.limit, args.label, path, unique), config, **how)
    done = run_command(command, opts)
    skipped = f" ({len(done.skipped)} invalid row(s) skipped)" if done.skipped else ""
    head = f"scored {done.written} variants with {args.model}"
    report_done(head, done, args.out, opts.shard, unique=unique, extra=skipped)
    if args.saturate and opts.shard.is_whole:
        _saturation_outputs(args, job, done.state, wild_type, spec, config.get("cdr_span"))
    if labels is not None:
        _evaluate(args, methods, labels)
    return 0


def _saturation_outputs(args, job, state, wild_type: str, spec, span) -> None:
    from ..runtime.writers import read_results
    from ..variants.mutations import residue_positions
    from ..variants.report import saturation_from_rows, write_matrix
    from ..variants.saturation import write_csv, write_heatmap

    methods, offset = spec.methods, spec.offset
    score = "masked_marginals" if "masked_marginals" in methods else "wt_marginals"
    if score not in methods:
        print("warning: no heatmap (--saturate draws wt_marginals or masked_marginals)", file=sys.stderr)
        return
    mlm = (state or job.load("cpu")).mlm  # the tokenizer's residue positions (worker runs keep theirs)
    first = int(residue_positions(mlm, wild_type[:1])[1][0])
    lo, hi = span or (0, len(wild_type))  # --cdr: the region's rows alone
    sat = saturation_from_rows(read_results(args.out), wild_type[lo:hi], first + lo, offset + lo, first_number=lo + 1)
    stem = Path(args.out).with_suffix("")
    write_csv(sat, f"{stem}.saturation.csv")
    write_matrix(sat, f"{stem}.heatmap.csv", score)
    write_heatmap(sat, f"{stem}.heatmap.png", score, title=f"{score} ({args.model})")
    shape = f"{hi - lo} x {len(sat.letters)}"
    print(f"saturation: {stem}.heatmap.png, {stem}.heatmap.csv ({shape}), {stem}.saturation.csv", file=sys.stderr)


def _labels(args, config: dict, path: str | None) -> dict:
    """Each row's ``--label`` value (nan where empty); one line naming the first row whose label is not a number."""
    labels = {}
    for u in _units(config, args.limit, args.label, path):
        try:
            labels[u.id] = float(u.label) if u.label not in (None, "") else float("nan")
        except ValueError:
            raise MLMProbError(f"row {u.row}: label {u.label!r} in column {args.label!r} is not a number") from None
    return labels


def _evaluate(args, methods, labels: dict) -> None:
    from ..runtime.writers import read_results
    from ..variants.report import _num, evaluate_methods, format_table, small_sample_warning

    scores = {str(r["id"]): {m: _num(r.get(m)) for m in methods} for r in read_results(args.out)}
    result = evaluate_methods(scores, labels, methods, seed=args.seed, n_boot=args.n_boot, top=args.top)
    print(format_table(result, args.top))
    if (warning := small_sample_warning(result)) is not None:
        print(warning, file=sys.stderr)
    eval_path = Path(args.out).with_suffix(".eval.json")
    kept = {"label": args.label, "seed": args.seed, "n_boot": args.n_boot, "top": args.top, "methods": result}
    eval_path.write_text(dumps(kept, indent=2) + "\n")
    print(f"evaluation -> {eval_path}", file=sys.stderr)
