"""Evaluation metrics, each defined once: of sequences against a reference (``sequences``: top-k
exact match, sentence and corpus BLEU, identity, stutter; the per-gap metrics of the infilling tables)
and of scores against measured values (``ranking``: Spearman, AUROC, NDCG, top recall, batched over
resamples; percentile bootstrap intervals, single and paired) and the exact sign test of a paired
comparison (``significance``). Joint-specific metrics (perplexities,
KL) are in ``mlmprob.joints.metrics``, MCMC diagnostics in ``mlmprob.sampling.diagnostics``.
"""

from .ranking import Estimate, PairedBootstrap, auroc, bootstrap, evaluate, ndcg, rank_average, spearman, top_recall
from .sequences import bleu, corpus_bleu, gap_metrics, identity, stutter_rate, topk_hit
from .significance import exact_sign_test

__all__ = [
    "Estimate",
    "PairedBootstrap",
    "auroc",
    "bleu",
    "bootstrap",
    "corpus_bleu",
    "evaluate",
    "exact_sign_test",
    "gap_metrics",
    "identity",
    "ndcg",
    "rank_average",
    "spearman",
    "stutter_rate",
    "top_recall",
    "topk_hit",
]
