"""``mlmprob`` command line: a thin layer over the Python API.

Input errors (``MLMProbError``) print one line, ``error: ...``, and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .batching import DEFAULT_BATCH_TOKENS
from .errors import MLMProbError

COMMANDS = ("score", "merge", "demo", "sample", "joints", "infill", "train")


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def add_model_args(p: argparse.ArgumentParser, default: str = "antiberty") -> None:
    """The options every model-using command shares."""
    from .runtime.device import default_dtype_spec

    p.add_argument("--model", default=default,
                   help="built-in name (antiberty, sapiens-vh, sapiens-vl, en-small), local HF directory, or hub id")
    p.add_argument("--device", default="auto",
                   help="torch device: auto (CUDA, else MPS, else CPU), cpu, cuda, cuda:1, mps")
    p.add_argument("--dtype", default=default_dtype_spec(),
                   help="auto (bf16 on CUDA/bf16-capable CPUs, fp16 on older GPUs, else float32), float32, "
                        "bfloat16 or float16; $MLMPROB_DTYPE sets the default")
    p.add_argument("--batch-tokens", type=_positive_int, default=None,
                   help="token budget of one forward sub-batch (default: from the device's free memory on GPUs, "
                        f"{DEFAULT_BATCH_TOKENS} on CPUs; lower it if memory runs out)")


def add_runtime_args(p: argparse.ArgumentParser) -> None:
    """Streaming, sharding, resume and parallelism: the options of every command that loops over units."""
    g = p.add_argument_group("scale")
    g.add_argument("--resume", action="store_true", help="continue --out: skip units already there, then append")
    g.add_argument("--shard", metavar="I/N", help="process only shard I of N (1-based; record k goes to shard k mod N + 1)")
    g.add_argument("--workers", type=_positive_int, default=None, help="N CPU worker processes, one model each")
    g.add_argument("--devices", help="comma-separated devices, one worker process each, e.g. cuda:0,cuda:1")
    g.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local processes, or Ray actors (pip install 'mlmprob[ray]')")
    g.add_argument("--ray-address", default=None, help="Ray cluster address (default: start a local Ray instance)")
    g.add_argument("--part-rows", type=_positive_int, default=1024,
                   help="rows per committed Parquet part (a killed run loses at most the part in flight)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def load_model_from_args(args):
    """Load ``--model`` on ``--device`` in ``--dtype`` and settle ``args.batch_tokens`` for that device."""
    from .batching import auto_batch_tokens
    from .models import load_mlm

    mlm = load_mlm(args.model, device=args.device, dtype=args.dtype)
    args.batch_tokens = auto_batch_tokens(mlm, args.batch_tokens)
    return mlm


def model_dtype_label(dtype_spec, device: str) -> str:
    """The dtype that ``dtype_spec`` means on ``device``, as text (for the CLI's output)."""
    from .runtime.device import resolve_device, resolve_dtype

    dt = resolve_dtype(dtype_spec, resolve_device(device))
    return "float32" if dt is None else str(dt).replace("torch.", "")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="mlmprob", description="Probabilistic inference with masked language models.")
    parser.add_argument("--version", action="version", version=f"mlmprob {__version__}")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: torch's choice; 1 is fastest for small models on a busy CPU)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
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
        if args.threads < 1:
            print(f"error: --threads must be >= 1, got {args.threads}", file=sys.stderr)
            return 2
        import torch
        torch.set_num_threads(args.threads)
    try:
        return int(args.func(args) or 0)
    except MLMProbError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
