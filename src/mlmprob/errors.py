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
