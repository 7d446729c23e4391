"""Every construction and every metric of one pair from one set of forward passes."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from ..models.protocol import MaskedLM
from ..settings import Spec, check_int
from .conditionals import PairConditionals, pair_conditionals, resolve_candidates, topk_candidates
from .constructions import _JOINTS, DEFAULT_AG_MAX_STEPS, DEFAULT_AG_TOL, AGResult, ag_joint, default_pivot, pivot_pair
from .metrics import PairMetrics, ci_gap, pair_metrics


@dataclass(frozen=True)
class AGOptions:
    """AG settings: ``steps`` fixed (the paper's 50) or None to run to ``tol`` / ``max_steps``."""

    steps: int | None = None
    tol: float = DEFAULT_AG_TOL
    max_steps: int = DEFAULT_AG_MAX_STEPS


@dataclass(frozen=True)
class PairSpec(Spec):
    """The settings of :func:`evaluate_pair`: ``top_k`` (None: the full candidate vocabulary; ``k``: the ``k`` most
    probable ids under the both-masked conditionals), ``pivot`` (HCB's pivot, a pair of token ids; None: the mode
    of the MLM joint) and AG's ``ag_steps`` (fixed; None: run to ``ag_tol`` or ``ag_max_steps``), as
    :class:`~mlmprob.joints.spec.JointsSpec` names them.

    >>> PairSpec(top_k=0)
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: top_k must be None (every candidate) or an integer >= 1, got 0
    """

    top_k: int | None = None
    pivot: tuple[int, int] | None = None
    ag_steps: int | None = None
    ag_tol: float = DEFAULT_AG_TOL
    ag_max_steps: int = DEFAULT_AG_MAX_STEPS

    def __post_init__(self):
        from .spec import check_ag_limits

        if self.top_k is not None:
            check_int("top_k", self.top_k, 1, "None (every candidate) or an integer >= 1")
        if self.pivot is not None:
            object.__setattr__(self, "pivot", pivot_pair(self.pivot))
        check_ag_limits(self.ag_steps, self.ag_tol, self.ag_max_steps)

    @property
    def ag(self) -> AGOptions:
        return AGOptions(self.ag_steps, self.ag_tol, self.ag_max_steps)


@dataclass(frozen=True)
class PairEvaluation:
    """All five joints of one pair with their metrics and the MLM diagnostics."""

    conditionals: PairConditionals
    joints: dict[str, torch.Tensor]  # method -> log-joint [K, K]
    metrics: dict[str, PairMetrics]  # method -> metrics
    ag: AGResult
    ci_gap: float
    incompatibility: float  # A-KL of the AG joint
    pivot: tuple[int, int]
    seconds_forward: float
    seconds_total: float

    def record(self) -> dict:
        """A JSON-ready summary (no tables); the pair as token indices (``a_token_index``, ``b_token_index``:
        0-based, special tokens counted, what :func:`evaluate_pair` takes)."""
        pc = self.conditionals
        return {
            "a_token_index": pc.a,
            "b_token_index": pc.b,
            "gold": list(pc.gold),
            "K": pc.size,
            "gold_in_candidates": pc.gold_index is not None,
            "n_forward": pc.n_forward,
            "n_calls": pc.n_calls,
            "pivot": list(self.pivot),
            "ci_gap": self.ci_gap,
            "incompatibility": self.incompatibility,
            "ag_steps": self.ag.steps,
            "ag_converged": self.ag.converged,
            "ag_change": self.ag.change,
            "outside_mass": pc.outside_mass,
            "seconds_forward": self.seconds_forward,
            "seconds_total": self.seconds_total,
            "metrics": {m: v.as_dict() for m, v in self.metrics.items()},
        }


def evaluate_conditionals(
    pc: PairConditionals,
    *,
    pivot: tuple[int, int] | None = None,
    ag: AGOptions = AGOptions(),
    seconds_forward: float = 0.0,
) -> PairEvaluation:
    """Build the five joints from ``pc`` and score them."""
    t0 = time.perf_counter()
    piv = default_pivot(pc) if pivot is None else (int(pivot[0]), int(pivot[1]))
    agr = ag_joint(pc, steps=ag.steps, tol=ag.tol, max_steps=ag.max_steps)
    joints = {m: agr.log_joint if m == "ag" else joint(pc, piv) for m, joint in _JOINTS.items()}  # METHODS' order
    metrics = {m: pair_metrics(pc, j, use_mlm_unary=(m == "mlm")) for m, j in joints.items()}
    t1 = time.perf_counter()
    return PairEvaluation(
        pc, joints, metrics, agr, ci_gap(pc), metrics["ag"].akl, piv, seconds_forward, seconds_forward + t1 - t0
    )


def evaluate_pair(
    mlm: MaskedLM, input_ids, a: int, b: int, spec: PairSpec | None = None, *, candidates=None, **overrides
) -> PairEvaluation:
    """Forward passes for pair ``(a, b)`` (``2K + 1`` rows, plus one with ``top_k``), then all joints and metrics,
    with the settings ``spec`` (:class:`PairSpec`; keywords override its fields). ``top_k`` restricts ``V'``
    (``candidates``, else the model's proposal ids, else its vocabulary) to the ``k`` most probable ids under the
    both-masked conditionals (an approximation; ``outside_mass`` in the record measures what it drops).

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> ev = evaluate_pair(m, torch.tensor([1, 1]), 0, 1)
    >>> round(ev.metrics["ag"].akl, 6), round(ev.metrics["hcb"].akl, 6), ev.conditionals.n_forward
    (0.0, 0.0, 5)
    """
    spec = PairSpec.of(spec, **overrides)
    t0 = time.perf_counter()
    if spec.top_k is not None:
        candidates = topk_candidates(mlm, input_ids, a, b, spec.top_k, within=resolve_candidates(mlm, candidates))
    pc = pair_conditionals(mlm, input_ids, a, b, candidates)
    return evaluate_conditionals(pc, pivot=spec.pivot, ag=spec.ag, seconds_forward=time.perf_counter() - t0)
