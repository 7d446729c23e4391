"""``mlmprob sample``: MH or degenerate-Gibbs chains, or ancestral (chain-rule) draws, plain or speculative, from an
MLM, optionally only over a CDR.

Two modes, chosen by ``--out``: a folder (every chain of every input in one batch, :mod:`mlmprob.sampling.folder`;
rerun to continue), or a ``.jsonl``/``.tsv``/``.parquet`` file or stdout (records streamed, one row per chain, each
record's chains seeded from ``(--seed, record id)``: ``--resume``, ``--shard`` and ``--workers`` change nothing)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import MLMProbError
from ..jsonl import dumps
from .common import Sequences, report_done, run_options, stored_inputs
from .sampler_args import add_sampler_args, sampler_spec

if TYPE_CHECKING:
    from ..runtime.command import RunOptions


def parse_positions(text: str) -> list[int]:
    """``--positions``: 1-based residue/word numbers, ``"3,5,10-12"`` (:func:`mlmprob.positions.parse_numbers`)."""
    from ..positions import parse_numbers

    return parse_numbers(text, "--positions")


def is_streamed(out: str | None) -> bool:
    """Whether ``--out`` asks for streamed rows (a result file, or stdout) rather than a run folder."""
    return out is None or out == "-" or Path(out).suffix.lower() in (".jsonl", ".tsv", ".parquet")


def check_out(out: str | None) -> None:
    """Refuse an ``--out`` that is neither a result file (.jsonl, .tsv, .parquet) nor a run folder: a name ending in
    a file suffix such as ``.fasta`` or ``.gz`` (unless that folder exists already)."""
    if out is None or is_streamed(out):
        return
    if re.fullmatch(r"\.[A-Za-z][A-Za-z0-9]*", Path(out).suffix) and not Path(out).is_dir():
        raise MLMProbError(
            f"--out {out!r}: give a folder (no suffix) for a run folder, or a .jsonl, .tsv or "
            ".parquet file for streamed rows"
        )


def register(sub) -> None:
    from .common import add_dedupe_arg, add_input_args, add_model_args, add_runtime_args
    from .regions import add_cdr_args

    mh = "MH / degenerate Gibbs sampling from an MLM's energy (Goyal et al. 2022)"
    p = sub.add_parser("sample", help=f"{mh}, or ancestral draws of its chain-rule distributions")
    src = p.add_argument_group("input")
    src.add_argument("--seq", action="append", default=[], help="a sequence ('_' = mask); repeatable")
    src.add_argument("--input", help="file of sequences: text lines, FASTA, CSV/TSV, JSONL or Parquet, optionally .gz")
    add_input_args(src, of="--input")
    add_dedupe_arg(src)
    base = "1-based as in mutation strings (the first residue is 1; 0-based in earlier versions)"
    src.add_argument("--positions", help=f"free residue/word numbers, {base}, e.g. 3,5,10-12 (default: all)")
    add_cdr_args(src, "free only this region; the rest is clamped")
    add_model_args(p)
    add_sampler_args(p)
    folder = "a folder (run.jsonl, samples.fasta, summary.json, trace.png)"
    rows = "a .jsonl, .tsv or .parquet file of one row per chain, streamed (default: stdout JSONL)"
    p.add_argument("--out", "-o", help=f"{folder}, or {rows}")
    p.add_argument("--no-plot", action="store_true", help="folder mode: no trace.png")
    skip = "streamed mode: skip records that cannot be sampled (a CDR that does not number, bad positions)"
    p.add_argument("--skip-invalid", action="store_true", help=f"{skip}, with a warning")
    add_runtime_args(p)
    p.set_defaults(func=run)


@dataclass(frozen=True)
class Parsed:
    """What :func:`run` parses once from the command line, and all the rest of the command reads (``positions``:
    the ``--positions`` text)."""

    inputs: Sequences
    given: dict  # the input as the stored configuration names it (the file, --seq, --format, --column, ...)
    region: tuple[str, str] | None
    job: dict  # the fields a sampling job of either mode takes: model_spec, spec, chains, seed, the free positions
    options: RunOptions
    positions: str | None
    plot: bool = True
    skip_invalid: bool = False


def expected_ids(config: dict, limit: int | None = None):
    """The chain ids (``RECORD/chainC``) a streamed run with this stored ``config`` covers, for ``mlmprob merge``."""
    return (f"{rec.id}/chain{c}" for rec in stored_inputs(config).records() for c in range(int(config["chains"])))


def run(args) -> int:
    from .common import input_file, model_spec
    from .regions import resolve_cdr

    region = resolve_cdr(args)
    if args.positions and region:
        raise MLMProbError("give --positions or --cdr, not both")
    positions = tuple(parse_positions(args.positions)) if args.positions else None  # a 0: refused before any load
    spec = sampler_spec(args)  # the sampler's settings, parsed once: a flag --method does not take is refused
    check_out(args.out)
    streamed = is_streamed(args.out)
    streamed_only = {"--shard": args.shard, "--workers": args.workers, "--devices": args.devices}
    streamed_only.update({"--engine ray": args.engine == "ray", "--skip-invalid": args.skip_invalid})
    if not streamed and (flags := [flag for flag, on in streamed_only.items() if on]):
        why = "a folder --out samples every chain in one batch and resumes by itself"
        raise MLMProbError(f"{flags[0]} needs a .jsonl, .tsv or .parquet --out ({why})")
    file = input_file(args)
    given = {"input": file and file.source, "seqs": list(args.seq), "format": file.format if file else args.format}
    given.update(column=args.column, id_column=args.id_column)
    cdr, numbering = region or (None, "imgt")
    job = dict(model_spec=model_spec(args), spec=spec, chains=args.chains, seed=args.seed, positions=positions)
    job.update(cdr=cdr, numbering=numbering)
    inputs = Sequences(tuple(args.seq), file, args.dedupe)
    parsed = Parsed(inputs, given, region, job, run_options(args), args.positions, not args.no_plot, args.skip_invalid)
    return run_streamed(parsed) if streamed else run_folder(parsed)


def _stored_config(parsed: Parsed, job, **mode) -> dict:
    """The configuration a run stores and a resume compares (``mode``: more keys, ``mode="folder"``)."""
    from ..runtime.command import stored_config
    from .regions import cdr_config
    from .resume_positions import canonical_positions

    base = {"positions_base": 1} if parsed.positions else {}
    before = {**parsed.given, "positions": canonical_positions(parsed.positions), **base, **mode}
    before.update(cdr_config(parsed.region))
    after = {"dedupe": True} if parsed.inputs.dedupe else {}
    return stored_config("sample", job.model_spec, job.settings(), before, after)


def _resumed(parsed: Parsed, config: dict, out) -> dict:
    """``config`` with the resumed output's stored ``--positions`` text when this run's frees the same tokens of
    every record (:mod:`.resume_positions`)."""
    from .resume_positions import same_free_positions, stored_positions

    def same(a, b) -> bool:  # the model's tokenizer tells; loaded here only when the texts differ
        where = dict(cdr=parsed.job["cdr"], numbering=parsed.job["numbering"])
        return same_free_positions(parsed.job["model_spec"].load("cpu"), parsed.inputs.records(), a, b, **where)

    return stored_positions(out, config, same)


def run_folder(parsed: Parsed) -> int:
    """Folder mode, through the one runner: one unit (every chain of every input, in one batch), its rows in
    ``OUT/chains.jsonl``, its epochs in ``OUT/run.jsonl`` (a rerun resumes after the last complete epoch), then the
    report from the run file; ``OUT/run.jsonl.lock`` refuses a second process sampling into the folder."""
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
    out, file = Path(parsed.options.out), parsed.inputs.file
    job = FolderSampleJob(**parsed.job, folder=str(out), progress=parsed.options.progress)
    config = _resumed(parsed, _stored_config(parsed, job, mode="folder"), out / CHAINS_FILE)
    unit = BatchUnit(tuple(seqs))
    last = f"{seqs[-1][0]}/chain{job.chains - 1}"
    out.mkdir(parents=True, exist_ok=True)
    with WriterLock(out / RUN_FILE):
        how: dict = dict(unit_name="batch", chunk_size=1, last_row_id=lambda u: last, input=file and file.path)
        opts = replace(parsed.options, out=str(out / CHAINS_FILE), resume=True, progress=False)
        done = run_command(StreamCommand(job, lambda: [unit], config, **how), opts)
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
    """Streamed mode: one row per chain, the record the unit of sharding and resuming (a record whose rows a kill
    cut is sampled again, identically, and only its missing chains are added)."""
    from ..runtime.command import StreamCommand, run_command
    from ..runtime.unique import UniqueIds
    from ..sampling.stream import SampleJob

    opts = parsed.options
    unique = UniqueIds(parsed.inputs.dedupe)
    file = parsed.inputs.file
    job = SampleJob(**parsed.job, skip_invalid=parsed.skip_invalid)
    config = _stored_config(parsed, job)
    if opts.resume:
        config = _resumed(parsed, config, opts.out)
    last = f"/chain{job.chains - 1}"
    how: dict = dict(input=file and file.path, unit_steps=job.spec.total_epochs, last_row_id=lambda r: r.id + last)
    how.update(empty=f"no sequences found in {file.shown}" if file else "no input: give --seq or --input")
    # the bar: every epoch of every record (its chains together)
    command = StreamCommand(job, lambda: parsed.inputs.records(unique), config, unit_name="epoch", chunk_size=1, **how)
    done = run_command(command, opts)
    head = f"sampled {done.written} chains of {done.units} records with {job.model_spec.model}"
    report_done(head, done, opts.out, opts.shard, unique=unique, unit="records ")
    return 0
