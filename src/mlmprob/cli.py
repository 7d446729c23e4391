"""``mlmprob`` command line: a thin layer over the Python API.

Input errors (``MLMProbError``), file-system errors (``OSError``, naming the file) and usage errors (a bad option or
value) print one line, ``error: ...``, and exit with status 2."""

from __future__ import annotations

import argparse
import importlib
import io
import os
import re
import sys

from . import __version__
from .argtypes import thread_count
from .errors import MLMProbError

COMMANDS = tuple("score calibrate merge demo sample design joints infill train variants app check_model".split())


def plain(text: str) -> str:
    r"""Help text as a terminal shows it: double backticks and roles removed (``:func:`~a.b.c``` reads ``c``,
    ``:class:`a.B``` reads ``a.B``)."""
    text = re.sub(r":[a-z]+(?::[a-z]+)?:`(~?)([^`]+)`", lambda m: m[2].rpartition(".")[2] if m[1] else m[2], text)
    return re.sub(r"``(.+?)``", r"\1", text, flags=re.DOTALL)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every option's default except None ("not given": the help says what happens then), a switch's False
    and a default the help already words; writes every help text :func:`plain`."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default is None or (action.default is False and action.nargs == 0) or "default" in text.lower():
            return text
        return super()._get_help_string(action)

    def _expand_help(self, action):
        return plain(super()._expand_help(action))

    def _format_text(self, text):
        return super()._format_text(plain(text))


class RawDescriptionHelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """:class:`HelpFormatter` keeping the description's own line breaks (a command whose description is laid out)."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, ``error: ...``, exit status 2; it and its subparsers
    (the same class) write help with :class:`HelpFormatter` (raw descriptions kept where a command asks)."""

    def __init__(self, *args, **kwargs):
        raw = kwargs.get("formatter_class") is argparse.RawDescriptionHelpFormatter
        kwargs["formatter_class"] = RawDescriptionHelpFormatter if raw else HelpFormatter
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        print(f"error: {message} (see: {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="mlmprob", description="Probabilistic inference with masked language models.")
    parser.add_argument("--version", action="version", version=f"mlmprob {__version__}")
    parser.add_argument(
        "--threads",
        type=thread_count,
        help="torch CPU threads (default: torch's choice; 1 is fastest for small models on a busy CPU)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help="run 'mlmprob COMMAND --help' for its options")
    for name in COMMANDS:
        importlib.import_module(f".commands.{name}", __package__).register(sub)
    return parser


class ClosedStdout(io.TextIOBase):
    """``sys.stdout`` when the process started with standard output closed (``>&-``; Python leaves it None):
    writing to it is an input error, one line."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not text:
            return 0
        raise MLMProbError("standard output is closed (>&-): give --out FILE, or leave standard output open")


def guard_closed_stdout() -> None:
    """With standard output closed, descriptor 1 is taken by ``/dev/null`` (so no file this run opens lands on it)
    and ``sys.stdout`` becomes :class:`ClosedStdout`: writing there stops with one line, ``--out`` works."""
    if sys.stdout is not None:
        return
    try:
        os.fstat(1)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
    sys.stdout = ClosedStdout()


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    guard_closed_stdout()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # MLMProbError: --help or --version with standard output closed
        if not getattr(args, "func", None):
            parser.print_help()
            return 1
        if args.threads is not None:
            import torch

            torch.set_num_threads(args.threads)
        from .runtime.hold import check_hold
        from .runtime.spool import command_scope, sweep

        check_hold()  # a malformed $MLMPROB_HOLD: one line, before any work
        sweep()  # the stdin copies of killed runs
        with command_scope():  # stdin spooled once; the copies removed at the end
            return int(args.func(args) or 0)
    except (MLMProbError, OSError) as e:  # OSError: the file system said no (missing folder, disk full): a data error
        print(f"error: {os_error_message(e) if isinstance(e, OSError) else e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def os_error_message(e: OSError) -> str:
    """One line for a file-system error, naming the file(s) it concerns."""
    files = " -> ".join(str(f) for f in (e.filename, e.filename2) if f is not None)
    what = (e.strerror or str(e) or type(e).__name__).splitlines()[0]
    return f"cannot read or write {files}: {what}" if files else f"cannot read or write: {what}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
