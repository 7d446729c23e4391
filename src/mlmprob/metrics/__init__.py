"""Evaluation metrics, each defined once: of sequences against a reference (``sequences``: top-k
exact match, sentence and corpus BLEU, identity, stutter; the per-gap metrics of the infilling tables)
and of scores against measured values (``ranking``: Spearman, AUROC, NDCG, top recall, batched over
resamples; percentile bootstrap intervals, single and paired) and the exact sign test of a paired
comparison (``significance``). Joint-specific metrics (perplexities,
KL) are in ``mlmprob.joints.metrics``, MCMC diagnostics in ``mlmprob.sampling.diagnostics``.
"""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "Estimate": ".ranking",
        "PairedBootstrap": ".ranking",
        "auroc": ".ranking",
        "bootstrap": ".ranking",
        "evaluate": ".ranking",
        "ndcg": ".ranking",
        "rank_average": ".ranking",
        "spearman": ".ranking",
        "top_recall": ".ranking",
        "bleu": ".sequences",
        "corpus_bleu": ".sequences",
        "gap_metrics": ".sequences",
        "identity": ".sequences",
        "stutter_rate": ".sequences",
        "topk_hit": ".sequences",
        "exact_sign_test": ".significance",
    },
)
