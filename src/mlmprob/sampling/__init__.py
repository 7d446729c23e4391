"""Sampling from the energy networks behind masked LMs: the MCMC kernels (``MetropolisHastings``,
``DegenerateGibbs``, ``LiteralMH`` for reference), the independent draws (``Ancestral``, speculative, ``Unmasking``,
``Adaptive``, mask-predict), ``sample`` (many chains with burn-in, thinning, diagnostics and a resumable record),
``mask_predict`` and ``find_cdr_h3``.
"""

from ..lazy import exports

_HOMES = (
    (".adaptive", "Adaptive"),
    (".ancestral", "Ancestral AncestralState"),
    (".api", "DrawResult SampleResult sample"),
    (".cdr", "cdr_h3_mask find_cdr_h3"),
    (".diagnostics", "effective_sample_size reference_identity split_rhat"),
    (".init", "initialize resolve_free"),
    (".kernels", "ChainState DegenerateGibbs MetropolisHastings StepInfo sweep_plan"),
    (".maskpredict", "MaskPredictResult mask_predict"),
    (".options", "ProposalConfig"),
    (".proposals", "proposal_log_probs"),
    (".reference", "LiteralMH"),
    (".spec", "SamplerSpec"),
    (".options", "Constant LinearAnneal LinearBlockSize"),
    (".unmasking", "DecoderState Unmasking"),
)
__getattr__, __dir__, __all__ = exports(__name__, {name: home for home, names in _HOMES for name in names.split()})
