"""Sampling from the energy networks behind masked LMs: the MCMC kernels (``MetropolisHastings``,
``DegenerateGibbs``, ``LiteralMH`` for reference), the independent draws (``Ancestral``, speculative, ``Unmasking``,
``Adaptive``, mask-predict), ``sample`` (many chains with burn-in, thinning, diagnostics and a resumable record),
``mask_predict`` and ``find_cdr_h3``.
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
        "Constant": ".options",
        "LinearAnneal": ".options",
        "LinearBlockSize": ".options",
        "DecoderState": ".unmasking",
        "Unmasking": ".unmasking",
    },
)
