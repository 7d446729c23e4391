"""Pairwise joints from masked LMs (Torroba Hennigen & Kim 2023): MLM, MRF, MRF-logit, HCB, AG,
their metrics (U-PPL, P-PPL, A-KL, G-KL). The `mlmprob joints` job lives here too: ``job`` (pairs to records,
on the one streaming runner), ``records`` (its resumable record file), ``report`` and ``plots``; the CLI layer
(``mlmprob.commands.joints``) only parses arguments.

``pair_conditionals`` runs the ``2|V'| + 1`` masked copies of one pair once; every construction
and metric reuses it. ``pairwise_joint`` is the thin fixed API on top.
"""

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
