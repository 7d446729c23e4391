"""Synthetic languages with exactly known distributions, the ground truth for every method: ``HMM``, ``PottsChain`` and
``PottsGrid`` give exact ``log_prob``, conditionals for any mask pattern and i.i.d. samples; ``as_mlm()``: a MaskedLM.
"""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "LanguageMLM": ".base",
        "SyntheticLanguage": ".base",
        "ChainLanguage": ".chain",
        "PottsGrid": ".grid",
        "HMM": ".hmm",
        "KINDS": ".kinds",
        "load_language": ".io",
        "make_language": ".io",
        "save_language": ".io",
        "PottsChain": ".potts",
    },
)
