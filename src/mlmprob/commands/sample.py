"""``mlmprob sample``: MH or degenerate-Gibbs chains, or ancestral (chain-rule) draws, plain or speculative, from an
MLM, optionally only over CDR-H3.

Two modes, chosen by ``--out``: a folder (every chain of every input in one batch, :mod:`mlmprob.sampling.folder`:
``run.jsonl``, ``chains.jsonl``, ``samples.fasta``, ``summary.json``, ``trace.png``; rerun to continue), or a
``.jsonl``/``.tsv``/``.parquet`` file or stdout (records streamed, each record's chains seeded from ``(--seed, record
id)``, one row per chain; ``--resume``, ``--shard`` and ``--workers`` do not change the results).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MLMProbError
from ..jsonl import dumps
from .common import InputFile, Sequences, report_done, run_options
from .sampler_args import add_sampler_args, sampler_spec

if TYPE_CHECKING:
    from ..models.spec import ModelSpec
    from ..runtime.command import RunOptions
    from ..sampling.registry import SamplerSpec

STREAM_SUFFIXES = (".jsonl", ".tsv", ".parquet")


def parse_positions(text: str) -> list[int]:
    """``--positions``: ``"3,5,10-12"`` -> ``[3, 5, 10, 11, 12]``, 1-based residue/word numbers (ranges
    inclusive) read by :func:`mlmprob.positions.parse_numbers`, as the app reads them; 0 is refused.

    >>> parse_positions("3,5,10-12")
    [3, 5, 10, 11, 12]
    """
    from ..positions import parse_numbers

    return parse_numbers(text, "--positions")


def is_streamed(out: str | None) -> bool:
    """Whether ``--out`` asks for streamed rows (a result file, or stdout) rather than a run folder.

    >>> is_streamed(None), is_streamed("runs/x.parquet"), is_streamed("runs/tras_mh")
    (True, True, False)
    """
    return out is None or out == "-" or Path(out).suffix.lower() in STREAM_SUFFIXES


def check_out(out: str | None) -> None:
    """Refuse an ``--out`` that is neither a result file (.jsonl, .tsv, .parquet) nor a run folder: a name
    ending in a file suffix such as ``.fasta``, ``.csv`` or ``.gz`` (unless that folder exists already).

    >>> check_out("runs/x.tsv"), check_out("runs/tras_mh"), check_out("runs/v1.2")
    (None, None, None)
    >>> check_out("x.fasta")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: --out 'x.fasta': give a folder (no suffix) for a run folder, or a .jsonl, .tsv or
    .parquet file for streamed rows
    """
    import re

    if out is None or is_streamed(out):
        return
    suffix = Path(out).suffix
    if re.fullmatch(r"\.[A-Za-z][A-Za-z0-9]*", suffix) and not Path(out).is_dir():
        raise MLMProbError(
            f"--out {out!r}: give a folder (no suffix) for a run folder, or a .jsonl, .tsv or "
            ".parquet file for streamed rows"
        )


def register(sub) -> None:
    p = sub.add_parser(
        "sample",
        help="MH / degenerate Gibbs sampling from an MLM's energy (Goyal et al. 2022), "
        "or ancestral draws of its chain-rule distributions",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    src = p.add_argument_group("input")
    src.add_argument("--seq", action="append", default=[], help="a sequence ('_' = mask); repeatable")
    src.add_argument("--input", help="file of sequences: text lines, FASTA, CSV/TSV, JSONL or Parquet, optionally .gz")
    from .common import add_dedupe_arg, add_input_args

    add_input_args(src, of="--input")
    add_dedupe_arg(src)
    src.add_argument(
        "--positions",
        help="free residue/word numbers, 1-based as in mutation strings (the first residue "
        "is 1; 0-based in earlier versions), e.g. 3,5,10-12 (default: all)",
    )
    from .regions import add_cdr_args

    add_cdr_args(src, "free only this region; the rest is clamped")
    from .common import add_model_args, add_runtime_args

    add_model_args(p)
    add_sampler_args(p)
    p.add_argument(
        "--out",
        "-o",
        help="a folder (run.jsonl, samples.fasta, summary.json, trace.png), or a .jsonl, "
        ".tsv or .parquet file of one row per chain, streamed (default: stdout JSONL)",
    )
    p.add_argument("--no-plot", action="store_true", help="folder mode: no trace.png")
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="streamed mode: skip records that cannot be sampled (a CDR that does not number, bad positions), "
        "with a warning",
    )
    add_runtime_args(p)
    p.set_defaults(func=run)


@dataclass(frozen=True)
class Parsed:
    """What :func:`run` parses once from the command line, and all that the rest of the command reads: the input
    sequences (and the input flags as given, for the stored configuration), the region, the model, the sampler's
    spec, where and how it runs (``options``), the chains and seed, the free positions (``positions``: the
    ``--positions`` text) and the folder's plot."""

    inputs: Sequences
    region: tuple[str, str] | None
    model: ModelSpec
    spec: SamplerSpec
    options: RunOptions
    chains: int
    seed: int
    cdr: str | None
    numbering: str
    positions: str | None
    given: dict  # --seq, --format, --column, --id-column as given (the stored configuration's)
    plot: bool = True
    skip_invalid: bool = False


def expected_ids(config: dict, limit: int | None = None):
    """The chain ids a streamed run with this stored ``config`` covers (``RECORD/chainC`` for every input
    record), for ``mlmprob merge``'s check that every input appears in the parts."""
    path = config.get("input")
    file = (
        InputFile(path, config.get("format", "auto"), config.get("column"), config.get("id_column")) if path else None
    )
    for rec in Sequences(tuple(config.get("seqs") or []), file, config.get("dedupe", False)).records():
        for c in range(int(config["chains"])):
            yield f"{rec.id}/chain{c}"


def run(args) -> int:
    from .common import input_file, model_spec
    from .regions import resolve_cdr

    region = resolve_cdr(args)
    if args.positions and region:
        raise MLMProbError("give --positions or --cdr, not both")
    if args.positions:
        parse_positions(args.positions)  # a bad list (a 0: the old base) is refused before anything loads
    spec = sampler_spec(args)  # the sampler's settings, parsed once: a flag --method does not take is refused
    check_out(args.out)
    streamed = is_streamed(args.out)
    for flag, on in (
        ("--shard", args.shard),
        ("--workers", args.workers),
        ("--devices", args.devices),
        ("--engine ray", args.engine == "ray"),
        ("--skip-invalid", args.skip_invalid),
    ):
        if on and not streamed:
            raise MLMProbError(
                f"{flag} needs a .jsonl, .tsv or .parquet --out (a folder --out samples every "
                "chain in one batch and resumes by itself)"
            )
    parsed = Parsed(
        Sequences(tuple(args.seq), input_file(args), args.dedupe),
        region,
        model_spec(args),
        spec,
        run_options(args),
        args.chains,
        args.seed,
        args.cdr,
        args.numbering or "imgt",
        args.positions,
        dict(seqs=list(args.seq), format=args.format, column=args.column, id_column=args.id_column),
        plot=not args.no_plot,
        skip_invalid=args.skip_invalid,
    )
    return run_streamed(parsed) if streamed else run_folder(parsed)


def _job_fields(parsed: Parsed) -> dict:
    """The fields a sampling job of either mode takes from the command line: the model, the spec, the chains,
    the seed and the free positions."""
    return dict(
        model_spec=parsed.model,
        spec=parsed.spec,
        chains=parsed.chains,
        seed=parsed.seed,
        cdr=parsed.cdr,
        numbering=parsed.numbering,
        positions=tuple(parse_positions(parsed.positions)) if parsed.positions else None,
    )


def _stored_config(parsed: Parsed, job, **mode) -> dict:
    """The configuration a run stores and a resume compares: the input, the free positions, ``mode``'s keys
    (``mode="folder"``), the region and the job's settings."""
    from ..runtime.command import stored_config
    from .regions import cdr_config
    from .resume_positions import canonical_positions

    file, given = parsed.inputs.file, parsed.given
    before = {
        "input": None if file is None else file.source,
        "seqs": given["seqs"],
        "format": given["format"] if file is None else file.format,
        "column": given["column"],
        "id_column": given["id_column"],
        "positions": canonical_positions(parsed.positions),
        **({"positions_base": 1} if parsed.positions else {}),
        **mode,
        **cdr_config(parsed.region),
    }
    after = {"dedupe": True} if parsed.inputs.dedupe else {}
    return stored_config("sample", job.model_spec, job.settings(), before, after)


def _resumed(parsed: Parsed, config: dict, out) -> dict:
    """``config`` with the resumed output's stored ``--positions`` text when this run's frees the same tokens of
    every record (:mod:`.resume_positions`: ``1-32`` on 32-residue records is the default, all positions)."""
    from .resume_positions import same_free_positions, stored_positions

    def same(a, b) -> bool:  # the model's tokenizer tells; loaded here only when the texts differ
        where = dict(cdr=parsed.cdr, numbering=parsed.numbering)
        return same_free_positions(parsed.model.load("cpu"), parsed.inputs.records(), a, b, **where)

    return stored_positions(out, config, same)


def run_folder(parsed: Parsed) -> int:
    """Folder mode, through the one runner: one unit (every chain of every input, in one batch), its rows in
    ``OUT/chains.jsonl``, its epochs in ``OUT/run.jsonl`` (a rerun resumes after the last complete epoch),
    then the folder's report from the run file. The run holds ``OUT/run.jsonl.lock`` from before the model
    loads until the last file is written: a second process sampling into the same folder is refused at once."""
    from ..runtime.command import StreamCommand, run_command
    from ..runtime.lock import WriterLock
    from ..runtime.unique import UniqueIds
    from ..sampling.folder import CHAINS_FILE, RUN_FILE, BatchUnit, FolderSampleJob, result_of_run
    from .sample_report import summary_of, write_fasta

    unique = UniqueIds(parsed.inputs.dedupe)
    seqs = [(r.id, r.seq) for r in parsed.inputs.records(unique)]
    if unique.warning():
        print(unique.warning(), file=sys.stderr)
    if not seqs:
        raise MLMProbError("no input: give --seq or --input")
    assert parsed.options.out is not None  # a folder run has a folder
    out = Path(parsed.options.out)
    job = FolderSampleJob(**_job_fields(parsed), folder=str(out), progress=parsed.options.progress)
    config = _resumed(parsed, _stored_config(parsed, job, mode="folder"), out / CHAINS_FILE)
    unit = BatchUnit(tuple(seqs))
    last = f"{seqs[-1][0]}/chain{job.chains - 1}"
    out.mkdir(parents=True, exist_ok=True)
    with WriterLock(out / RUN_FILE):
        done = run_command(
            StreamCommand(
                job,
                lambda: [unit],
                config,
                unit_name="batch",
                chunk_size=1,
                last_row_id=lambda u: last,
                input=None if parsed.inputs.file is None else parsed.inputs.file.path,
            ),
            replace(parsed.options, out=str(out / CHAINS_FILE), resume=True, progress=False),
        )
        assert done.state is not None  # the folder run's one batch ran in this process: its state is here
        result = result_of_run(out, job.spec)
        if result is None:  # the run file lost epochs after its rows were written: complete it again
            result = job.sample_batch(done.state.mlm, unit)
        write_fasta(out / "samples.fasta", result, [name for name, _ in seqs], job.chains, done.state.mlm)
        summary = summary_of(result, job.spec)
        (out / "summary.json").write_text(dumps(summary, indent=2) + "\n")
        if parsed.plot:
            from ..sampling.plots import plot_traces

            plot_traces(result, out / "trace.png")
    print(dumps(summary))
    return 0


def run_streamed(parsed: Parsed) -> int:
    """Streamed mode: one row per chain into a .jsonl/.tsv/.parquet file (or stdout), the record being the
    unit of sharding and resuming (a record is done when all its chains are in the output; a record whose
    rows a kill cut in the middle is sampled again, identically, and only its missing chains are added)."""
    from ..runtime.command import StreamCommand, run_command
    from ..runtime.unique import UniqueIds
    from ..sampling.stream import SampleJob

    opts = parsed.options
    unique = UniqueIds(parsed.inputs.dedupe)
    file = parsed.inputs.file
    job = SampleJob(**_job_fields(parsed), skip_invalid=parsed.skip_invalid)
    config = _stored_config(parsed, job)
    if opts.resume:
        config = _resumed(parsed, config, opts.out)
    last = f"/chain{job.chains - 1}"
    command = StreamCommand(
        job,
        lambda: parsed.inputs.records(unique),
        config,
        input=None if file is None else file.path,
        empty=f"no sequences found in {file.shown}" if file else "no input: give --seq or --input",
        unit_name="epoch",  # the bar: every epoch of every record (its chains together)
        unit_steps=job.spec.total_epochs,
        chunk_size=1,
        last_row_id=lambda r: r.id + last,
    )
    done = run_command(command, opts)
    head = f"sampled {done.written} chains of {done.units} records with {parsed.model.model}"
    report_done(head, done, opts.out, opts.shard, unique=unique, unit="records ")
    return 0
