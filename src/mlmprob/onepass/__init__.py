"""One-pass PLL: masked conditionals estimated from one unmasked forward pass plus a fitted correction."""

from .correction import Correction, find_correction
from .api import pll
from .estimate import METHODS, one_pass_token_scores
from .fit import CalibrationResult, calibrate, fit_correction

__all__ = ["Correction", "find_correction", "METHODS", "one_pass_token_scores", "CalibrationResult", "calibrate",
           "fit_correction", "pll"]
