"""``mlmprob`` command line: a thin layer over the Python API.

Input errors (``MLMProbError``) and usage errors (a bad option or value) print one line,
``error: ...``, and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .argtypes import positive_int
from .batching import DEFAULT_BATCH_TOKENS
from .errors import MLMProbError

COMMANDS = ("score", "calibrate", "merge", "demo", "sample", "joints", "infill", "train", "variants", "app")


def add_model_args(p: argparse.ArgumentParser, default: str = "antiberty") -> None:
    """The options every model-using command shares."""
    from .runtime.device import default_dtype_spec

    p.add_argument("--model", default=default,
                   help="built-in name (antiberty, sapiens-vh, sapiens-vl, en-small), local HF directory, or hub id")
    p.add_argument("--device", default="auto",
                   help="torch device: auto (CUDA, else MPS, else CPU), cpu, cuda, cuda:1, mps")
    p.add_argument("--dtype", default=default_dtype_spec(),
                   help="auto (bf16 on CUDA/bf16-capable CPUs, fp16 on older GPUs, else float32), float32, "
                        "bfloat16, float16, or int8 (linear layers in int8, x86 CPUs); $MLMPROB_DTYPE sets the default")
    p.add_argument("--batch-tokens", type=positive_int, default=None,
                   help="token budget of one forward sub-batch (default: from the device's free memory on GPUs, "
                        f"{DEFAULT_BATCH_TOKENS} on CPUs; lower it if memory runs out)")
    add_allow_pickle_arg(p)


def add_runtime_args(p: argparse.ArgumentParser) -> None:
    """Streaming, sharding, resume and parallelism: the options of every command that loops over units."""
    g = p.add_argument_group("scale")
    g.add_argument("--resume", action="store_true", help="continue --out: skip units already there, then append")
    g.add_argument("--shard", metavar="I/N", help="process only shard I of N (1-based; record k goes to shard k mod N + 1)")
    g.add_argument("--workers", type=positive_int, default=None, help="N CPU worker processes, one model each")
    g.add_argument("--devices", help="comma-separated devices, one worker process each, e.g. cuda:0,cuda:1")
    g.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local processes, or Ray actors (pip install 'mlmprob[ray]')")
    g.add_argument("--ray-address", default=None, help="Ray cluster address (default: start a local Ray instance)")
    g.add_argument("--part-rows", type=positive_int, default=1024,
                   help="rows per committed Parquet part (a killed run loses at most the part in flight)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def load_model_from_args(args):
    """Load ``--model`` on ``--device`` in ``--dtype`` and settle ``args.batch_tokens`` for that device."""
    from .batching import auto_batch_tokens
    from .models import load_mlm

    mlm = load_mlm(args.model, device=args.device, dtype=args.dtype, allow_pickle=getattr(args, "allow_pickle", False))
    args.batch_tokens = auto_batch_tokens(mlm, args.batch_tokens)
    return mlm


def model_dtype_label(dtype_spec, device: str) -> str:
    """The dtype that ``dtype_spec`` means on ``device``, as text (for the CLI's output)."""
    from .runtime.device import resolve_device, resolve_dtype

    dt = resolve_dtype(dtype_spec, resolve_device(device))
    return "float32" if dt is None else str(dt).replace("torch.", "")


def add_allow_pickle_arg(p: argparse.ArgumentParser) -> None:
    """``--allow-pickle``: the opt-in for a local model folder whose weights exist only as a pickle."""
    p.add_argument("--allow-pickle", action="store_true",
                   help="allow a local model folder whose weights are only a pickle (pytorch_model.bin); "
                        "it is still read with torch.load(weights_only=True), which runs no code")


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, ``error: ...`` (no usage block), with
    exit status 2; its subparsers are of the same class."""

    def error(self, message: str):
        print(f"error: {message} (see: {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .argtypes import positive_int

    parser = Parser(prog="mlmprob", description="Probabilistic inference with masked language models.")
    parser.add_argument("--version", action="version", version=f"mlmprob {__version__}")
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="torch CPU threads (default: torch's choice; 1 is fastest for small models on a busy CPU)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help="run 'mlmprob COMMAND --help' for its options")
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f".commands.{name}", __package__)
        except ModuleNotFoundError as e:
            if e.name and e.name.endswith(f"commands.{name}"):
                continue  # command not built yet
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    if args.threads is not None:
        import torch
        torch.set_num_threads(args.threads)
    try:
        return int(args.func(args) or 0)
    except MLMProbError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the file system said no (missing folder, read-only, disk full): a data error
        where = f" {e.filename}" if getattr(e, "filename", None) else ""
        print(f"error: cannot read or write{where}: {e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
