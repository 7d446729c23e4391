"""Pairwise joints from masked LMs (Torroba Hennigen & Kim 2023): MLM, MRF, MRF-logit, HCB, AG and their
metrics; the `mlmprob joints` job (``job``, ``records``, ``report``, ``plots``) lives here too."""

from ..lazy import exports

__getattr__, __dir__, __all__ = exports(
    __name__,
    {
        "PairConditionals": ".conditionals",
        "pair_conditionals": ".conditionals",
        "resolve_candidates": ".conditionals",
        "topk_candidates": ".conditionals",
        "METHODS": ".constructions",
        "AGResult": ".constructions",
        "ag_joint": ".constructions",
        "ag_objective": ".constructions",
        "default_pivot": ".constructions",
        "hcb_joint": ".constructions",
        "joint_from": ".constructions",
        "PairJointSpec": ".constructions",
        "mlm_joint": ".constructions",
        "mrf_joint": ".constructions",
        "mrf_logit_joint": ".constructions",
        "pairwise_joint": ".constructions",
        "AGOptions": ".evaluate",
        "PairSpec": ".evaluate",
        "PairEvaluation": ".evaluate",
        "evaluate_conditionals": ".evaluate",
        "evaluate_pair": ".evaluate",
        "JointSummary": ".metrics",
        "PairMetrics": ".metrics",
        "ci_gap": ".metrics",
        "joint_conditionals": ".metrics",
        "pair_metrics": ".metrics",
        "summarize": ".metrics",
    },
)
