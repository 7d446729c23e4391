"""The options several commands share (model, scale) and loading a model from them.

Commands import these from here, never from :mod:`mlmprob.cli` (which imports the commands).
"""

from __future__ import annotations

import argparse

from .. import defaults
from ..argtypes import positive_int
from ..runtime.inputs import FORMATS


def add_input_args(p, *, of: str = "", ids: bool = True) -> None:
    """``--format``, ``--column`` (and ``--id-column``) of a sequence file; ``of`` names the option that
    gives the file (e.g. ``--input``) when it is not the positional input."""
    where = f" of {of}" if of else ""
    p.add_argument("--format", default="auto", choices=FORMATS, help=f"format{where} (auto: by the file's suffix)")
    p.add_argument("--column", help=f"sequence column of a CSV/TSV/Parquet file or key of a JSONL object{where}")
    if ids:
        p.add_argument("--id-column", help=f"identifier column (or JSONL key){where}")


def add_dedupe_arg(p) -> None:
    """``--dedupe``: drop records whose id repeats an earlier one (a repeated id is an error without it)."""
    p.add_argument(
        "--dedupe",
        action="store_true",
        help="keep the first of records sharing an id and drop the "
        "others, with a warning (without it a repeated id is an error: results and --resume are keyed by id)",
    )


def spool_args_input(args, attr: str = "input") -> str | None:
    """Make ``args.<attr>`` readable more than once: standard input (``-``), a pipe or a FIFO is copied once
    to a temporary file (:func:`~mlmprob.runtime.inputs.spool_input`; ``args.format`` is set from its name
    or content). Returns the input as a run's configuration names it: a file's resolved path, else the name
    given (``-``, ``/dev/fd/63``)."""
    from pathlib import Path

    from ..runtime.inputs import spool_input

    given = getattr(args, attr)
    if given is None:
        return None
    path, args.format = spool_input(given, args.format)
    if str(path) == str(given):
        return str(Path(given).resolve())
    setattr(args, attr, str(path))
    return str(given)


def add_model_args(p: argparse.ArgumentParser, default: str = defaults.MODEL, why: str | None = None) -> None:
    """The options every model-using command shares. ``default``: the command's ``--model`` default, which
    differs from :data:`mlmprob.defaults.MODEL` only with its reason ``why`` (shown in ``--help``)."""
    model_help = "built-in name (antiberty, sapiens-vh, sapiens-vl, en-small), local HF directory, or hub id"
    if default != defaults.MODEL:
        if not why:
            raise ValueError(f"--model default {default!r} differs from mlmprob.defaults.MODEL: give the reason")
        model_help += f" (default {default}, not {defaults.MODEL}: {why})"
    p.add_argument("--model", default=default, help=model_help)
    p.add_argument(
        "--device",
        default=defaults.DEVICE,
        help="torch device: auto (CUDA, else MPS, else CPU), cpu, cuda, cuda:1, mps",
    )
    p.add_argument(
        "--dtype",
        default=defaults.default_dtype_spec(),
        help=f"{defaults.DTYPE_WEIGHTS} (the weights' own dtype: float32 for the built-in models, the "
        "checkpoint's for others, float32 for a half-precision checkpoint on a CPU; the same numbers "
        "on every machine), auto (faster, less exact: bf16 on CUDA/bf16-capable CPUs, fp16 on older "
        "GPUs, else float32), float32, bfloat16, float16, or int8 (linear layers in int8, x86 CPUs); "
        f"${defaults.DTYPE_ENV} sets the default (load_mlm's default is {defaults.DTYPE})",
    )
    p.add_argument(
        "--batch-tokens",
        type=positive_int,
        default=None,
        help="token budget of one forward sub-batch (default: from the device's free memory on GPUs, "
        f"{defaults.BATCH_TOKENS} on CPUs; lower it if memory runs out)",
    )
    add_allow_pickle_arg(p)


def add_runtime_args(p: argparse.ArgumentParser) -> None:
    """Streaming, sharding, resume and parallelism: the options of every command that loops over units."""
    g = p.add_argument_group("scale")
    g.add_argument("--resume", action="store_true", help="continue --out: skip units already there, then append")
    g.add_argument(
        "--shard", metavar="I/N", help="process only shard I of N (1-based; record k goes to shard k mod N + 1)"
    )
    g.add_argument("--workers", type=positive_int, default=None, help="N CPU worker processes, one model each")
    g.add_argument("--devices", help="comma-separated devices, one worker process each, e.g. cuda:0,cuda:1")
    g.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local processes, or Ray actors (pip install 'mlmprob[ray]')",
    )
    g.add_argument("--ray-address", default=None, help="Ray cluster address (default: start a local Ray instance)")
    g.add_argument(
        "--part-rows",
        type=positive_int,
        default=defaults.PART_ROWS,
        help="rows per committed Parquet part (a killed run loses at most the part in flight)",
    )
    g.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def add_allow_pickle_arg(p: argparse.ArgumentParser) -> None:
    """``--allow-pickle``: the opt-in for a local model folder whose weights exist only as a pickle."""
    p.add_argument(
        "--allow-pickle",
        action="store_true",
        help="allow a local model folder whose weights are only a pickle (pytorch_model.bin); "
        "it is still read with torch.load(weights_only=True), which runs no code",
    )


def load_model_from_args(args):
    """Load ``--model`` on ``--device`` in ``--dtype``, settle ``args.batch_tokens`` for that device and give it
    to the model's reader (every read of the model then uses that budget): the loading block of the jobs,
    :meth:`mlmprob.models.spec.ModelSpec.load`."""
    from ..models.spec import ModelSpec

    spec = ModelSpec(args.model, args.dtype, getattr(args, "allow_pickle", False), args.batch_tokens)
    mlm = spec.load(args.device)
    args.batch_tokens = mlm.batch_tokens
    return mlm
