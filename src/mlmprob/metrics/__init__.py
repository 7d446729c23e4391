"""Evaluation metrics, each defined once: of sequences against a reference (``sequences``), of scores against measured
values with bootstrap intervals (``ranking``) and the exact sign test (``significance``). Joint metrics are in
``mlmprob.joints.metrics``, MCMC diagnostics in ``mlmprob.sampling.diagnostics``.
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
