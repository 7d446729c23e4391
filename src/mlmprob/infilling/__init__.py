"""Zero-shot infilling of a gap of known length with any masked LM (Calef et al.): ``infill`` (standard and HCB beam
search), ``sample_infill`` (sampling baselines), the ablations, the exhaustive references and the per-gap metrics."""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "bleu": "..metrics.sequences",
        "gap_metrics": "..metrics.sequences",
        "identity": "..metrics.sequences",
        "topk_hit": "..metrics.sequences",
        "BASELINES": ".baselines",
        "SamplingConfig": ".baselines",
        "sample_infill": ".baselines",
        "beam_search": ".beam",
        "infill": ".beam",
        "resolve_pivot": ".beam",
        "ContextScramble": ".corrections",
        "Pivot": ".corrections",
        "RandomTokenSwap": ".corrections",
        "Standard": ".corrections",
        "exact_infill": ".exhaustive",
        "exhaustive_infill": ".exhaustive",
        "InfillCandidate": ".gap",
        "candidate_ids": ".gap",
        "prepare_gap": ".gap",
        "InfillSpec": ".spec",
    },
)
