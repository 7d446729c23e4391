"""Zero-shot infilling of a gap of known length with any masked LM (Calef et al.).

``infill`` (standard and HCB beam search, left-to-right or best-to-worst), ``sample_infill`` (the
sampling baselines with the same forward passes), the ablations (``corrections``), exhaustive
references (``exhaustive_infill``, ``exact_infill``), and the per-gap metrics (from ``mlmprob.metrics``).
The experiments (the paper's tables, paired HCB-vs-standard comparisons, the HCB pivot sweep) are in
``experiments`` (``python -m experiments.infill_runner``, ``... .infill_pivots``).
"""

from ..metrics.sequences import bleu, gap_metrics, identity, topk_hit
from .baselines import BASELINES, SamplingConfig, sample_infill
from .beam import beam_search, infill, resolve_pivot
from .corrections import ContextScramble, Pivot, RandomTokenSwap, Standard
from .exhaustive import exact_infill, exhaustive_infill
from .gap import InfillCandidate, candidate_ids, prepare_gap
from .spec import InfillSpec

__all__ = ["BASELINES", "ContextScramble", "InfillCandidate", "InfillSpec", "Pivot", "RandomTokenSwap", "SamplingConfig",
           "Standard", "beam_search", "bleu", "candidate_ids", "exact_infill", "exhaustive_infill", "gap_metrics",
           "identity", "infill", "prepare_gap", "resolve_pivot", "sample_infill", "topk_hit"]
