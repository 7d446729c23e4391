"""Metrics of pairwise joints (Torroba Hennigen & Kim 2023, sec. 3), per pair then over a data set.

Per pair and method: ``pair_logp`` (P-PPL), ``unary_logp`` (U-PPL; the MLM construction uses the MLM's own
unary conditionals), ``akl`` (the mean KL of the MLM's conditionals from the joint's over all conditioning values)
and ``gkl`` (the same at the gold values). Over ``N`` pairs ``U-PPL = exp(-sum unary_logp / 2N)``, ``P-PPL =
exp(-sum pair_logp / 2N)``, A-KL and G-KL are means. Two diagnostics of the MLM: ``ci_gap`` (the dependence its
unary conditionals express and its both-masked joint ignores; the mutual information for compatible
conditionals) and ``incompatibility`` (the AG joint's A-KL: zero iff the unary families are compatible)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, astuple, dataclass

import torch

from .conditionals import PairConditionals


def joint_conditionals(log_joint: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log q'(w_a | w_b) [K, K] normalised over dim 0, log q'(w_b | w_a) normalised over dim 1)``."""
    return (
        log_joint - torch.logsumexp(log_joint, 0, keepdim=True),
        log_joint - torch.logsumexp(log_joint, 1, keepdim=True),
    )


def kl_columns(logp: torch.Tensor, logq: torch.Tensor, dim: int) -> torch.Tensor:
    """``KL(p || q)`` along ``dim`` (0 contributions where ``p = 0``; rounding below 0 clamped)."""
    p = logp.exp()
    diff = torch.where(p > 0, logp - logq, torch.zeros_like(logp))
    return (p * diff).sum(dim).clamp(min=0.0)


@dataclass(frozen=True)
class PairMetrics:
    """Per-pair quantities of one joint (see module docstring)."""

    pair_logp: float
    unary_logp: float
    akl: float
    gkl: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def pair_metrics(pc: PairConditionals, log_joint: torch.Tensor, *, use_mlm_unary: bool = False) -> PairMetrics:
    """Metrics of one joint on one pair. ``use_mlm_unary`` for the MLM construction (its U-PPL uses the MLM's unary
    conditionals). A gold token outside ``V'`` gives ``-inf`` log-probabilities and a NaN G-KL.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> from mlmprob.joints import pair_conditionals, hcb_joint
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> pc = pair_conditionals(m, torch.tensor([1, 1]), 0, 1)
    >>> r = pair_metrics(pc, hcb_joint(pc))
    >>> round(math.exp(r.pair_logp), 4), round(r.akl, 6)
    (0.4, 0.0)
    """
    ca, cb = joint_conditionals(log_joint)
    d_a = kl_columns(pc.cond_a, ca, 0)  # [K] per conditioning value w_b
    d_b = kl_columns(pc.cond_b, cb, 1)  # [K] per conditioning value w_a
    akl = float((d_a.sum() + d_b.sum()) / (2 * pc.size))
    g = pc.gold_index
    if g is None:
        return PairMetrics(-math.inf, -math.inf, akl, math.nan)
    ia, ib = g
    ua, ub = (pc.cond_a, pc.cond_b) if use_mlm_unary else (ca, cb)
    return PairMetrics(float(log_joint[ia, ib]), float(ua[ia, ib] + ub[ia, ib]), akl, float(0.5 * (d_a[ib] + d_b[ia])))


def ci_gap(pc: PairConditionals) -> float:
    """The MLM's conditional-independence gap on this pair, >= 0: ``1/2 [sum_w q_b(w) KL(q_a(.|x_b = w) || q_a)
    + sum_w q_a(w) KL(q_b(.|x_a = w) || q_b)]`` with ``q_a, q_b`` the both-masked conditionals."""
    d_a = kl_columns(pc.cond_a, pc.marg_a[:, None].expand_as(pc.cond_a), 0)  # per w_b
    d_b = kl_columns(pc.cond_b, pc.marg_b[None, :].expand_as(pc.cond_b), 1)  # per w_a
    return float(0.5 * ((pc.marg_b.exp() * d_a).sum() + (pc.marg_a.exp() * d_b).sum()))


@dataclass(frozen=True)
class JointSummary:
    """Table-1 metrics of one method over ``n`` pairs (``n_covered`` with the gold pair in ``V'``)."""

    u_ppl: float
    p_ppl: float
    a_kl: float
    g_kl: float
    n: int
    n_covered: int

    def as_dict(self) -> dict[str, float]:
        return dict(zip(("U-PPL", "P-PPL", "A-KL", "G-KL", "n", "n_covered"), astuple(self), strict=True))


def summarize(per_pair: Iterable[Mapping[str, float]]) -> JointSummary:
    """Aggregate per-pair metric dicts (``pair_logp``, ``unary_logp``, ``akl``, ``gkl``).

    >>> summarize([{"pair_logp": -2.0, "unary_logp": -1.0, "akl": 0.5, "gkl": 0.1},
    ...            {"pair_logp": -4.0, "unary_logp": -3.0, "akl": 0.1, "gkl": 0.3}]).p_ppl == math.exp(1.5)
    True
    """
    s_pair = s_unary = s_akl = s_gkl = 0.0
    n = n_cov = n_gkl = 0
    for r in per_pair:
        n += 1
        s_akl += r["akl"]
        n_cov += math.isfinite(r["pair_logp"])
        s_pair += r["pair_logp"]
        s_unary += r["unary_logp"]
        if not math.isnan(r["gkl"]):
            s_gkl += r["gkl"]
            n_gkl += 1
    if n == 0:
        return JointSummary(math.nan, math.nan, math.nan, math.nan, 0, 0)
    ppl = lambda s: math.exp(min(-s / (2 * n), 709.0)) if s > -math.inf else math.inf  # noqa: E731
    return JointSummary(ppl(s_unary), ppl(s_pair), s_akl / n, s_gkl / n_gkl if n_gkl else math.nan, n, n_cov)
