"""Errors raised on bad input. Each names the problem in one line."""

from __future__ import annotations

import sys
from collections.abc import Callable


class MLMProbError(ValueError):
    """Base class for every input error mlmprob raises on purpose: the CLI prints ``error: <message>`` and exits
    with status 2 (anything else is a bug)."""


class TokenizationError(MLMProbError):
    """Text that cannot be turned into model tokens (empty, unknown symbols, too long)."""


class PositionsError(MLMProbError):
    """A ``positions`` argument that does not fit the input ids."""


class ModelLoadError(MLMProbError):
    """A model name or path that cannot be loaded."""


class NonFiniteError(MLMProbError):
    """The model returned NaN or infinite logits (float16 overflow, broken weights), or a score came out
    infinite; ``rows``: the indices of the affected input sequences when known."""

    def __init__(self, message: str, rows=()):
        super().__init__(message)
        self.rows = tuple(int(r) for r in rows)


def exit_status(body: Callable[[], int | None]) -> int:
    """Run a command's ``body`` and give its exit status (None: 0); an input error (``MLMProbError``) is instead
    the one line ``error: <message>`` on stderr and status 2, the contract of every entry point."""
    try:
        return int(body() or 0)
    except MLMProbError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
