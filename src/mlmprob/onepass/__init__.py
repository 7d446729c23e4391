"""One-pass PLL: masked conditionals estimated from one unmasked forward pass plus a fitted correction."""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "Correction": ".correction",
        "find_correction": ".correction",
        "pll": ".api",
        "METHODS": ".estimate",
        "one_pass_token_scores": ".estimate",
        "CalibrationResult": ".fit",
        "calibrate": ".fit",
        "fit_correction": ".fit",
        "OnePassSpec": ".spec",
        "PLLSpec": ".spec",
    },
)
