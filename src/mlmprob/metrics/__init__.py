"""Evaluation metrics, each defined once: of sequences against a reference (``sequences``), of scores against measured
values (``ranking``) and the sign test (``significance``); joint metrics: ``mlmprob.joints.metrics``."""

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
