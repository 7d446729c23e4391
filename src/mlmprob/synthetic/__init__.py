"""Synthetic languages with exactly known distributions: the ground truth for every method.

``HMM`` (forward-backward), ``PottsChain`` and ``PottsGrid`` (transfer matrices over positions or whole columns) give
exact ``log_prob``, exact conditionals of every position for any mask pattern (mask id ``V``, as in ``ExactMLM``) and
exact i.i.d. samples; ``language.as_mlm()`` makes one a ``MaskedLM``.
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
