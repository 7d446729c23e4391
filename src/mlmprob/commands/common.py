"""The options several commands share (model, scale, input file) and the typed objects each command parses them into
once, at its top (:class:`InputFile`, :func:`model_spec`, :func:`run_options`, :func:`spec_of`): nothing below
``commands/`` sees a namespace. Commands import these from here, never from :mod:`mlmprob.cli` (which imports them)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import defaults
from ..argtypes import device_list, device_name, positive_int
from ..errors import MLMProbError
from ..runtime.inputs import FORMATS, Record, iter_records, spool_input


def add_input_args(p, *, of: str = "", ids: bool = True) -> None:
    """``--format``, ``--column`` (and ``--id-column``) of a sequence file; ``of``: the flag giving it (``--input``)."""
    where = f" of {of}" if of else ""
    p.add_argument("--format", default="auto", choices=FORMATS, help=f"format{where} (auto: by the file's suffix)")
    p.add_argument("--column", help=f"sequence column of a CSV/TSV/Parquet file or key of a JSONL object{where}")
    if ids:
        p.add_argument("--id-column", help=f"identifier column (or JSONL key){where}")


def add_dedupe_arg(p) -> None:
    """``--dedupe``: drop records whose id repeats an earlier one (a repeated id is an error without it)."""
    keep = "keep the first of records sharing an id and drop the others, with a warning"
    why = "without it a repeated id is an error: results and --resume are keyed by id"
    p.add_argument("--dedupe", action="store_true", help=f"{keep} ({why})")


@dataclass(frozen=True)
class InputFile:
    """A sequence file as a command reads it (:func:`input_file`): ``path`` is the file read now (standard input or
    a pipe copied once to a temporary file), ``format`` its settled format, ``column`` and ``id_column`` its
    columns; ``given`` the name the user gave and ``source`` the input as a run's configuration names it (a file's
    resolved path, else the name given: ``-``, ``/dev/fd/63``)."""

    path: str
    format: str = "auto"
    column: str | None = None
    id_column: str | None = None
    given: str = ""
    source: str = ""

    @property
    def shown(self) -> str:
        """The name the user gave, as a message names it (``-``: standard input)."""
        return "standard input" if self.given == "-" else self.given

    def records(self):
        """The file's records, streamed (:func:`mlmprob.runtime.inputs.iter_records`)."""
        return iter_records(self.path, self.format, self.column, self.id_column)


@dataclass(frozen=True)
class Sequences:
    """The records of ``--seq`` (``seq1``, ``seq2``, ...), then of the input ``file``; ids unique, or ``dedupe``d."""

    seqs: tuple[str, ...] = ()
    file: InputFile | None = None
    dedupe: bool = False

    def records(self, unique=None):
        """The records, streamed; ``unique``: the :class:`~mlmprob.runtime.unique.UniqueIds` check to use."""
        from ..runtime.unique import UniqueIds

        return (unique or UniqueIds(self.dedupe))(self._all())

    def _all(self):
        for i, s in enumerate(self.seqs):
            yield Record(f"seq{i + 1}", s)
        if self.file is not None:
            yield from self.file.records()


def stored_inputs(config: dict) -> Sequences:
    """The input a run's stored ``config`` names (``seqs``, ``input``, ``format``, ``column``, ``id_column``,
    ``dedupe``), for ``mlmprob merge``'s check of the ids the run covers."""
    path, fmt = config.get("input"), config.get("format", "auto")
    file = InputFile(path, fmt, config.get("column"), config.get("id_column")) if path else None
    return Sequences(tuple(config.get("seqs") or []), file, config.get("dedupe", False))


def input_file(args, attr: str = "input") -> InputFile | None:
    """The file ``args.<attr>`` names (None when none is given) with ``--format``, ``--column`` and ``--id-column``,
    made readable more than once (:func:`~mlmprob.runtime.inputs.spool_input`)."""
    given = getattr(args, attr)
    if given is None:
        return None
    path, fmt = spool_input(given, args.format)
    source = str(Path(given).resolve()) if str(path) == str(given) else str(given)
    columns = (getattr(args, "column", None), getattr(args, "id_column", None))
    return InputFile(str(path), fmt, *columns, str(given), source)


def out_folder(text: str) -> str:
    """The ``--out`` of a command that writes a folder, refused in one line when it names a file."""
    if Path(text).exists() and not Path(text).is_dir():
        raise MLMProbError(f"--out {text!r} is a file; give a folder")
    return text


def add_model_args(p: argparse.ArgumentParser, default: str = defaults.MODEL, why: str | None = None) -> None:
    """The options every model-using command shares; ``default``: the command's ``--model`` default (another than
    :data:`mlmprob.defaults.MODEL` only with its reason ``why``, shown in ``--help``)."""
    model_help = "built-in name (antiberty, sapiens-vh, sapiens-vl, en-small), local HF directory, or hub id"
    if default != defaults.MODEL:
        if not why:
            raise ValueError(f"--model default {default!r} differs from mlmprob.defaults.MODEL: give the reason")
        model_help += f" (default {default}, not {defaults.MODEL}: {why})"
    p.add_argument("--model", default=default, help=model_help)
    device = "torch device: auto (CUDA, else MPS, else CPU), cpu, cuda, cuda:1, mps"
    p.add_argument("--device", type=device_name, default=defaults.DEVICE, help=device)
    p.add_argument(
        "--dtype",
        default=defaults.default_dtype_spec(),
        help=f"{defaults.DTYPE_WEIGHTS} (the weights' own dtype: float32 for the built-in models, the "
        "checkpoint's for others, float32 for a half-precision checkpoint on a CPU; the same numbers "
        "on every machine), auto (faster, less exact: bf16 on CUDA/bf16-capable CPUs, fp16 on older "
        "GPUs, else float32), float32, bfloat16, float16, or int8 (linear layers in int8, x86 CPUs); "
        f"${defaults.DTYPE_ENV} sets the default (load_mlm's default is {defaults.DTYPE})",
    )
    gpus = "default: from the device's free memory on GPUs"
    budget = f"{gpus}, {defaults.BATCH_TOKENS} on CPUs; lower it if memory runs out"
    p.add_argument("--batch-tokens", type=positive_int, help=f"token budget of one forward sub-batch ({budget})")
    add_allow_pickle_arg(p)


def add_runtime_args(p: argparse.ArgumentParser) -> None:
    """Streaming, sharding, resume and parallelism: the options of every command that loops over units."""
    g = p.add_argument_group("scale")
    g.add_argument("--resume", action="store_true", help="continue --out: skip units already there, then append")
    shard = "process only shard I of N (1-based; record k goes to shard k mod N + 1)"
    g.add_argument("--shard", metavar="I/N", help=shard)
    g.add_argument("--workers", type=positive_int, help="N CPU worker processes, one model each")
    devices = "comma-separated devices, one worker process each, e.g. cuda:0,cuda:1"
    g.add_argument("--devices", type=device_list, help=devices)
    ray = "local processes, or Ray actors (pip install 'mlmprob[ray]')"
    g.add_argument("--engine", choices=("local", "ray"), default="local", help=ray)
    g.add_argument("--ray-address", help="Ray cluster address (default: start a local Ray instance)")
    part = "rows per committed Parquet part (a killed run loses at most the part in flight)"
    g.add_argument("--part-rows", type=positive_int, default=defaults.PART_ROWS, help=part)
    g.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def add_allow_pickle_arg(p: argparse.ArgumentParser) -> None:
    """``--allow-pickle``: the opt-in for a local model folder whose weights exist only as a pickle."""
    still = "it is still read with torch.load(weights_only=True), which runs no code"
    allow = f"allow a local model folder whose weights are only a pickle (pytorch_model.bin); {still}"
    p.add_argument("--allow-pickle", action="store_true", help=allow)


def model_spec(args):
    """``--model``, ``--dtype``, ``--allow-pickle`` and ``--batch-tokens`` as a
    :class:`~mlmprob.models.spec.ModelSpec` (the one object that holds the dtype)."""
    from ..models.spec import ModelSpec

    return ModelSpec(args.model, args.dtype, getattr(args, "allow_pickle", False), args.batch_tokens)


def load_model_from_args(args):
    """Load ``--model`` on ``--device`` (:meth:`mlmprob.models.spec.ModelSpec.load`, as the jobs do)."""
    return model_spec(args).load(args.device)


def run_options(args):
    """Where and how a streamed command runs (:class:`~mlmprob.runtime.command.RunOptions`): ``--device`` unless
    ``--workers`` or ``--devices`` name several, CPU workers capped for this machine and the model's size."""
    from ..runtime.capacity import capped_devices, capped_workers
    from ..runtime.command import RunOptions
    from ..runtime.pool import parse_devices
    from ..runtime.shard import parse_shard

    shard = parse_shard(args.shard)
    workers, local = args.workers, args.engine == "local"
    if workers and args.devices is None and local:  # Ray places its actors by the cluster's
        workers = capped_workers(workers, getattr(args, "model", None))  # resources; capped before the list
    devices = parse_devices(workers, args.devices)
    if args.devices and local:  # cpu,cpu,cpu: capped by the same rule as --workers
        devices = capped_devices(devices, getattr(args, "model", None))
    if devices == ["auto"]:
        devices = [args.device]
    opts = dict(out=args.out, resume=args.resume, shard=shard, devices=tuple(devices), engine=args.engine)
    return RunOptions(**opts, ray_address=args.ray_address, part_rows=args.part_rows, progress=not args.no_progress)


def spec_of(cls, args, **given):
    """The algorithm's spec ``cls`` of parsed arguments: every field whose name is an argument (``--my-option`` is
    ``my_option``); ``given`` (values the command computed) take precedence."""
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    return cls(**{**values, **given})


def report_done(head: str, done, out, shard, *, unique=None, unit: str = "", extra: str = "", tail: str = "") -> None:
    """A streamed command's closing lines on stderr: ``unique``'s warning, if any, then ``HEAD on DEVICE -> OUT
    (N UNITalready there)EXTRA (shard I/N)TAIL`` (each part where it applies)."""
    if unique is not None and unique.warning():
        print(unique.warning(), file=sys.stderr)
    where = (f" -> {out}" if out else "") + (f" ({done.already} {unit}already there)" if done.already else "")
    part = "" if shard.is_whole else f" (shard {shard})"
    print(f"{head} on {done.ran_on}{where}{extra}{part}{tail}", file=sys.stderr)
