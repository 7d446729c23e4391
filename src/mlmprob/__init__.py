"""mlmprob: probabilistic inference with masked language models.

Scoring (PLL, E_raw, whole-word PLL, the chain-rule ``loglik``), MH and Gibbs sampling, pair joints and infilling
on any object with the ``MaskedLM`` protocol; variant-effect scores; loaders for Hugging Face masked LMs and the
embedded antibody models; exact toy models, synthetic languages and an MLM trainer.

Importing mlmprob sets ``MKL_CBWR=AUTO,STRICT`` unless it is set already (:data:`mlmprob.defaults.MKL_CBWR`), or
``MKL_CBWR=`` (off) when torch was imported first and MKL may have started; a record's float32 scores on a CPU do not
depend on ``--threads`` or ``--workers`` either way (:mod:`mlmprob.runtime.threads`, docs/scale.md)."""

import os as _os
import sys as _sys

from .defaults import MKL_CBWR as _MKL_CBWR
from .lazy import exports as _exports

if _MKL_CBWR[0] not in _os.environ:  # before torch's first MKL call (torch is imported lazily, below)
    _os.environ[_MKL_CBWR[0]] = "" if "torch" in _sys.modules else _MKL_CBWR[1]  # MKL may have read it already

# The public names (``__all__``), each imported from its module on first use (PEP 562), so that ``import mlmprob``
# and the command line's ``--help``, ``--version`` and usage errors do not import torch or transformers.
# ``synthetic`` and ``training`` are the modules themselves; ``design``, ``energy`` and ``infill`` are functions (of
# ``mlmprob.designing``, ``mlmprob.energies`` and ``mlmprob.infilling``).
__getattr__, __dir__, __all__ = _exports(
    __name__,
    {
        "TokenScores": ".energies",
        "design": ".designing",
        "energy": ".energies",
        "token_scores": ".energies",
        "MLMProbError": ".errors",
        "InfillCandidate": ".infilling",
        "exact_infill": ".infilling",
        "exhaustive_infill": ".infilling",
        "infill": ".infilling",
        "sample_infill": ".infilling",
        "LogLik": ".likelihood",
        "loglik": ".likelihood",
        "PairConditionals": ".joints",
        "evaluate_pair": ".joints",
        "pair_conditionals": ".joints",
        "pairwise_joint": ".joints",
        "ExactMLM": ".models",
        "HFMaskedLM": ".models",
        "LookupMLM": ".models",
        "MaskedLM": ".models",
        "Reader": ".models",
        "load_mlm": ".models",
        "reader_of": ".models",
        "pll": ".onepass.api",
        "SampleResult": ".sampling",
        "mask_predict": ".sampling",
        "sample": ".sampling",
        "HMM": ".synthetic",
        "PottsChain": ".synthetic",
        "PottsGrid": ".synthetic",
        "SyntheticLanguage": ".synthetic",
        "synthetic": ".synthetic",
        "TrainConfig": ".training",
        "train": ".training",
        "training": ".training",
        "score_variants": ".variants",
    },
)

__version__ = "0.1.0"
