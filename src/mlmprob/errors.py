"""Errors raised on bad input. Each names the problem in one line."""


class MLMProbError(ValueError):
    """Base class for every input error mlmprob raises on purpose.

    The CLI prints ``error: <message>`` for these and exits with status 2; anything else is a bug.
    """


class TokenizationError(MLMProbError):
    """Text that cannot be turned into model tokens (empty, unknown symbols, too long)."""


class PositionsError(MLMProbError):
    """A ``positions`` argument that does not fit the input ids."""


class ModelLoadError(MLMProbError):
    """A model name or path that cannot be loaded."""


class NonFiniteError(MLMProbError):
    """The model returned NaN or infinite logits (float16 overflow, broken weights), or a score came
    out infinite. ``rows`` are the indices of the affected input sequences when known."""

    def __init__(self, message: str, rows=()):
        super().__init__(message)
        self.rows = tuple(int(r) for r in rows)
