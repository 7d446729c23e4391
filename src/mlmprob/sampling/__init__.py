"""Sampling from the energy networks behind masked LMs.

Kernels (``init(ids, free) -> ChainState``, ``step(state, generator) -> (ChainState, StepInfo)``):
``MetropolisHastings`` (Goyal et al. 2022, single-site and block, with cached single-site
conditionals), ``DegenerateGibbs`` (Wang & Cho 2019; ``k``-Gibbs of Li et al. 2024) and
``LiteralMH`` (Algorithm 1 verbatim, for reference), and ``Ancestral`` (exact draws of the
chain-rule distributions of ``mlmprob.loglik``; parallel decoding with ``tokens_per_step > 1``),
``Unmasking`` (confidence/margin/entropy-ordered unmasking, blocks, ReMDM remasking) and ``Adaptive`` (a
dependence-aware parallel decoder); ``decoder_exact`` enumerates the decoders' exact output law (on the engine of
``partial_states``, which also gives ``Ancestral``'s). ``sample`` runs many chains with burn-in,
thinning, diagnostics and a resumable JSONL record; ``mask_predict`` is the greedy refinement
baseline; ``find_cdr_h3`` locates CDR-H3 in a VH sequence.
"""

from .adaptive import Adaptive
from .ancestral import Ancestral, AncestralState
from .api import SampleResult, sample
from .cdr import cdr_h3_mask, find_cdr_h3
from .diagnostics import effective_sample_size, reference_identity, split_rhat
from .init import initialize, resolve_free
from .kernels import ChainState, DegenerateGibbs, MetropolisHastings, StepInfo, sweep_plan
from .mask_predict import MaskPredictResult, mask_predict
from .proposals import ProposalConfig, proposal_log_probs
from .reference import LiteralMH
from .schedules import Constant, LinearAnneal, LinearBlockSize
from .unmasking import DecoderState, Unmasking

__all__ = ["Ancestral", "AncestralState", "SampleResult", "sample", "cdr_h3_mask", "find_cdr_h3",
           "effective_sample_size", "reference_identity",
           "split_rhat", "initialize", "resolve_free", "ChainState", "DegenerateGibbs", "MetropolisHastings",
           "StepInfo", "sweep_plan", "MaskPredictResult", "mask_predict", "ProposalConfig", "proposal_log_probs",
           "LiteralMH", "Constant", "LinearAnneal", "LinearBlockSize", "Unmasking", "Adaptive", "DecoderState"]
