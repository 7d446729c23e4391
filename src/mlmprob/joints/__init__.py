"""Pairwise joints from masked LMs (Torroba Hennigen & Kim 2023): MLM, MRF, MRF-logit, HCB, AG,
their metrics (U-PPL, P-PPL, A-KL, G-KL). The `mlmprob joints` job lives here too: ``job`` (pairs to records,
on the one streaming runner), ``records`` (its resumable record file), ``report`` and ``plots``; the CLI layer
(``mlmprob.commands.joints``) only parses arguments.

``pair_conditionals`` runs the ``2|V'| + 1`` masked copies of one pair once; every construction
and metric reuses it. ``pairwise_joint`` is the thin fixed API on top.
"""

from .conditionals import PairConditionals, pair_conditionals, resolve_candidates, topk_candidates
from .constructions import (METHODS, AGResult, ag_joint, ag_objective, default_pivot, hcb_joint, joint_from,
                            mlm_joint, mrf_joint, mrf_logit_joint, pairwise_joint)
from .evaluate import AGOptions, PairEvaluation, evaluate_conditionals, evaluate_pair
from .metrics import JointSummary, PairMetrics, ci_gap, joint_conditionals, pair_metrics, summarize

__all__ = ["PairConditionals", "pair_conditionals", "resolve_candidates", "topk_candidates", "METHODS",
           "AGResult", "ag_joint", "ag_objective", "default_pivot", "hcb_joint", "joint_from", "mlm_joint",
           "mrf_joint", "mrf_logit_joint", "pairwise_joint", "AGOptions", "PairEvaluation",
           "evaluate_conditionals", "evaluate_pair", "JointSummary", "PairMetrics", "ci_gap",
           "joint_conditionals", "pair_metrics", "summarize"]
