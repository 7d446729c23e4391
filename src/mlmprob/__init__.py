"""mlmprob: probabilistic inference with masked language models.

Scoring (PLL / E_local, E_raw, whole-word PLL; the chain-rule likelihood ``loglik`` over orders), Metropolis-Hastings and Gibbs sampling, pair joints
(MRF, HCB, Arnold-Gokhale) and infilling beam search on any object with the ``MaskedLM`` protocol;
variant-effect scores
(``score_variants``); loaders for Hugging Face masked LMs (protein models included) and the
embedded antibody models; exact toy models, synthetic
languages with exact conditionals, and an MLM trainer.

A record's float32 scores on a CPU do not depend on ``--threads`` or ``--workers``: every forward computes
its matrix products by single-threaded MKL in blocks fixed by the shapes (:mod:`mlmprob.runtime.threads`).
Importing mlmprob also sets ``MKL_CBWR=AUTO,STRICT`` (Intel MKL's conditional numerical reproducibility)
unless it is set already (:data:`mlmprob.defaults.MKL_CBWR`; ``MKL_CBWR=`` (empty) turns it off); alone it
did not make products thread-count independent (docs/results/precision/threads_repro.md). MKL reads it at
its first call: a program that multiplied torch matrices on the CPU before importing mlmprob must set it in
its environment itself.
"""

import inspect as _inspect
import os as _os
import types as _types

from .defaults import MKL_CBWR as _MKL_CBWR

_os.environ.setdefault(*_MKL_CBWR)  # before torch makes its first MKL call (torch is imported below)

from .energy import TokenScores, token_scores
from .errors import MLMProbError
from .infill import InfillCandidate, exact_infill, exhaustive_infill, sample_infill
from .likelihood import LogLik, loglik
from .joints import PairConditionals, evaluate_pair, pair_conditionals, pairwise_joint
from .models import ExactMLM, HFMaskedLM, LookupMLM, MaskedLM, Reader, load_mlm, reader_of
from .onepass.api import pll
from .sampling import SampleResult, mask_predict, sample
from . import synthetic, training
from .synthetic import HMM, PottsChain, PottsGrid, SyntheticLanguage
from .training import TrainConfig, train
from .variants import score_variants

from . import energy, infill  # noqa: E402 - the modules themselves, callable (below)


class _CallableModule(_types.ModuleType):
    """A module that is also its main function, so no function shadows it: ``mlmprob.energy(...)`` calls
    ``mlmprob.energy.energy(...)`` and ``mlmprob.infill(...)`` calls ``mlmprob.infill.infill(...)``, while
    ``import mlmprob.energy``, ``from mlmprob import energy`` and ``mlmprob.energy`` are one object, the
    module (its other names, e.g. ``mlmprob.energy.token_scores``, read as usual)."""

    def __call__(self, *args, **kwargs):
        return getattr(self, self.__name__.rpartition(".")[2])(*args, **kwargs)


for _module in (energy, infill):
    _module.__class__ = _CallableModule
    _module.__signature__ = _inspect.signature(getattr(_module, _module.__name__.rpartition(".")[2]))

__version__ = "0.1.0"

__all__ = ["ExactMLM", "HFMaskedLM", "LookupMLM", "MaskedLM", "Reader", "reader_of", "MLMProbError", "TokenScores", "energy",
           "load_mlm", "pll", "LogLik", "loglik", "token_scores", "__version__",
           "PairConditionals", "evaluate_pair", "pair_conditionals", "pairwise_joint",
           "SampleResult", "mask_predict", "sample",
           "InfillCandidate", "exact_infill", "exhaustive_infill", "infill", "sample_infill",
           "synthetic", "training", "HMM", "PottsChain", "PottsGrid", "SyntheticLanguage", "TrainConfig", "train",
           "score_variants"]
