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

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "Adaptive": ".adaptive",
        "Ancestral": ".ancestral",
        "AncestralState": ".ancestral",
        "DrawResult": ".api",
        "SampleResult": ".api",
        "sample": ".api",
        "cdr_h3_mask": ".cdr",
        "find_cdr_h3": ".cdr",
        "effective_sample_size": ".diagnostics",
        "reference_identity": ".diagnostics",
        "split_rhat": ".diagnostics",
        "initialize": ".init",
        "resolve_free": ".init",
        "ChainState": ".kernels",
        "DegenerateGibbs": ".kernels",
        "MetropolisHastings": ".kernels",
        "StepInfo": ".kernels",
        "sweep_plan": ".kernels",
        "MaskPredictResult": ".maskpredict",
        "mask_predict": ".maskpredict",
        "ProposalConfig": ".options",
        "proposal_log_probs": ".proposals",
        "LiteralMH": ".reference",
        "SamplerSpec": ".spec",
        "Constant": ".schedules",
        "LinearAnneal": ".schedules",
        "LinearBlockSize": ".schedules",
        "DecoderState": ".unmasking",
        "Unmasking": ".unmasking",
    },
)
