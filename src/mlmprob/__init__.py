"""mlmprob: probabilistic inference with masked language models.

Scoring (PLL / E_local, E_raw, whole-word PLL; the chain-rule likelihood ``loglik`` over orders),
Metropolis-Hastings and Gibbs sampling, pair joints (MRF, HCB, Arnold-Gokhale) and infilling beam search on
any object with the ``MaskedLM`` protocol; variant-effect scores (``score_variants``); loaders for Hugging
Face masked LMs (protein models included) and the embedded antibody models; exact toy models, synthetic
languages with exact conditionals, and an MLM trainer.

A record's float32 scores on a CPU do not depend on ``--threads`` or ``--workers``: every forward computes
its large matrix products by threaded MKL in its strict reproducibility mode and the others by single-threaded
MKL in blocks fixed by the shapes (:mod:`mlmprob.runtime.threads`).
Importing mlmprob also sets ``MKL_CBWR=AUTO,STRICT`` (Intel MKL's conditional numerical reproducibility)
unless it is set already (:data:`mlmprob.defaults.MKL_CBWR`; ``MKL_CBWR=`` (empty) turns it off); alone it
did not make products thread-count independent (docs/results/precision/threads_repro.md). MKL reads it at
its first call: when torch was imported before mlmprob and ``MKL_CBWR`` is not set, mlmprob cannot know whether
MKL has started, so it sets ``MKL_CBWR=`` (off) instead, for itself and the workers it starts: every product then
runs in the fixed blocks (thread-invariant too, a little slower). Set ``MKL_CBWR=AUTO,STRICT`` in the environment,
or import mlmprob first, to have the strict mode.
"""

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
