"""Synthetic languages with exactly known distributions: the ground truth for every method.

``HMM`` (forward-backward), ``PottsChain`` and ``PottsGrid`` (transfer matrices over positions or
whole columns) give exact ``log_prob``, exact conditionals of every position for any mask pattern
(mask id ``V``, as in ``ExactMLM``) and exact i.i.d. samples; ``language.as_mlm()`` makes one a
``MaskedLM``.
"""

from .base import LanguageMLM, SyntheticLanguage
from .chain import ChainLanguage
from .grid import PottsGrid
from .hmm import HMM
from .io import KINDS, load_language, make_language, save_language
from .potts import PottsChain

__all__ = ["SyntheticLanguage", "LanguageMLM", "ChainLanguage", "HMM", "PottsChain", "PottsGrid", "KINDS",
           "make_language", "save_language", "load_language"]
