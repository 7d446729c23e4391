"""Zero-shot infilling of a gap of known length with any masked LM (Calef et al.).

``infill`` (standard and HCB beam search, left-to-right or best-to-worst), ``sample_infill`` (the
sampling baselines with the same forward passes), the ablations (``corrections``), exhaustive
references (``exhaustive_infill``, ``exact_infill``), and the per-gap metrics (from ``mlmprob.metrics``).
The experiments (the paper's tables, paired HCB-vs-standard comparisons, the HCB pivot sweep) are in
``experiments`` (``python -m experiments.infill_runner``, ``... .infill_pivots``).
"""

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
