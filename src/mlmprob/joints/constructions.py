"""Five ways to turn an MLM's conditionals into a joint over a pair (Torroba Hennigen & Kim 2023).

Each maps one ``PairConditionals`` to a normalised float64 log-joint ``[K, K]`` (rows ``x_a``): ``mlm_joint``
(eq. 1), ``mrf_joint`` / ``mrf_logit_joint`` (eq. 2, probabilities or raw logits), ``hcb_joint`` (eq. 3, with a
pivot; only logit differences within one softmax enter) and ``ag_joint`` (the Arnold-Gokhale iteration, eq. 4-5,
App. C, in log space). AG is a majorise-minimise algorithm for the summed KL of the conditionals, so that
objective never increases along the iteration (checked in the tests with ``trace=True``)."""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch

from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from ..settings import Spec
from .conditionals import PairConditionals, pair_conditionals

METHODS = ("mlm", "mrf_logit", "mrf", "hcb", "ag")
# the one display name of each construction (reports, plots, the app, the CLI), in ``METHODS`` order
METHOD_LABELS = {"mlm": "MLM", "mrf_logit": "MRF-logit", "mrf": "MRF", "hcb": "HCB", "ag": "AG"}
DEFAULT_AG_TOL = 1e-10
DEFAULT_AG_MAX_STEPS = 5000


def _mask_logits(t: torch.Tensor | None) -> torch.Tensor:
    """The mask token's logits, read when the pivot is the mask (which the model then has)."""
    assert t is not None, "the mask's logits: the pivot is the mask, so the model has one"
    return t


def _normalise(log_joint: torch.Tensor) -> torch.Tensor:
    return log_joint - torch.logsumexp(log_joint.flatten(), 0)


def mlm_joint(pc: PairConditionals) -> torch.Tensor:
    """Eq. 1: the product of the two conditionals with both positions masked."""
    return pc.marg_a[:, None] + pc.marg_b[None, :]


def mrf_joint(pc: PairConditionals) -> torch.Tensor:
    """Eq. 2: ``prop. to q_a(w_a | x_b = w_b) q_b(w_b | x_a = w_a)``."""
    return _normalise(pc.cond_a + pc.cond_b)


def mrf_logit_joint(pc: PairConditionals) -> torch.Tensor:
    """Eq. 2 with raw logits as log-potentials."""
    return _normalise(pc.logit_a + pc.logit_b)


def default_pivot(pc: PairConditionals) -> tuple[int, int]:
    """The paper's pivot: the mode of the MLM pair joint (eq. 1), as token ids."""
    return int(pc.candidates[pc.marg_a.argmax()]), int(pc.candidates[pc.marg_b.argmax()])


def hcb_joint(pc: PairConditionals, pivot: tuple[int, int] | None = None) -> torch.Tensor:
    """Eq. 3 with pivot ``(p_a, p_b)`` (token ids; default the mode of the MLM joint), ``l`` raw logits:

    ``log q(w_a, w_b) = [l_a(w_a | b = w_b) - l_a(p_a | b = w_b)] + [l_b(w_b | a = p_a) - l_b(p_b | a = p_a)]``

    A pivot id is a candidate, or the mask id when the output vocabulary has the mask token: then ``x_a = [MASK]``
    is the both-masked copy and ``l(. = [MASK])`` the mask token's logit as an output (no extra forward pass)."""
    if pivot is None:
        pivot = default_pivot(pc)
    try:
        pa, pb = (int(p) for p in pivot)
    except (TypeError, ValueError):
        raise MLMProbError(f"pivot must be a pair of token ids, got {pivot!r}") from None
    has_mask = pc.mask_logit_a is not None

    def where(p: int, name: str) -> int | None:  # index in V', or None for the mask
        i = pc.index_of.get(p)
        if i is not None:
            return i
        if p == pc.mask_id and has_mask:
            return None
        extra = " or the mask id" if has_mask else " (this model has no mask token among its outputs)"
        raise MLMProbError(f"pivot {name} = {p} is not a candidate token{extra}")

    ia, ib = where(pa, "p_a"), where(pb, "p_b")
    # first factor: a-copies with b = w_b (columns), read token w_a vs p_a
    ref_a = _mask_logits(pc.mask_logit_a) if ia is None else pc.logit_a[ia]
    term_a = pc.logit_a - ref_a[None, :]
    # second factor: the b-copy with a = p_a, read token w_b vs p_b
    if ia is None:
        row_b = pc.marg_logit_b
        ref_b = _mask_logits(pc.mask_logit_marg)[1] if ib is None else pc.marg_logit_b[ib]
    else:
        row_b = pc.logit_b[ia]
        ref_b = _mask_logits(pc.mask_logit_b)[ia] if ib is None else pc.logit_b[ia, ib]
    term_b = row_b - ref_b
    return _normalise(term_a + term_b[None, :])


@dataclass(frozen=True)
class AGResult:
    """The Arnold-Gokhale joint and how it got there: ``steps`` updates applied; ``converged``: the last update
    moved the joint by less than ``tol`` in total variation (``change``); ``objective``: ``J`` after each step
    (``[steps + 1]``, from the uniform start) when ``trace=True``, else only the final value (``[1]``)."""

    log_joint: torch.Tensor
    steps: int
    converged: bool
    change: float
    objective: torch.Tensor


def ag_objective(pc: PairConditionals, log_joint: torch.Tensor) -> torch.Tensor:
    """``J(mu)``: sum over conditioning values of ``KL(q_a(.|w') || mu_{a|b}(.|w'))`` plus the same for ``b``
    (eq. 4); zero iff ``mu``'s conditionals equal the MLM's."""
    mu_a = log_joint - torch.logsumexp(log_joint, 0, keepdim=True)  # mu(w_a | w_b)
    mu_b = log_joint - torch.logsumexp(log_joint, 1, keepdim=True)  # mu(w_b | w_a)
    return _kl_sum(pc.cond_a, mu_a) + _kl_sum(pc.cond_b, mu_b)


def _kl_sum(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    p = logp.exp()
    diff = torch.where(p > 0, logp - logq, torch.zeros_like(logp))
    return (p * diff).sum()


def ag_joint(
    pc: PairConditionals,
    *,
    steps: int | None = None,
    tol: float = DEFAULT_AG_TOL,
    max_steps: int = DEFAULT_AG_MAX_STEPS,
    trace: bool = False,
) -> AGResult:
    """Arnold-Gokhale (App. C) from the uniform joint, in log space:

    ``log mu' = logaddexp(log q_a, log q_b) - logaddexp(-log mu_a, -log mu_b)``, renormalised.

    With ``steps`` it runs exactly that many updates (the paper used 50); otherwise it stops when an update changes
    the joint by less than ``tol`` in total variation, or after ``max_steps``."""
    from .spec import MAX_AG_STEPS

    name, limit, lo = ("steps", steps, 0) if steps is not None else ("max_steps", max_steps, 1)
    if limit < lo:
        raise MLMProbError(f"AG {name} must be >= {lo}, got {limit}")
    if limit > MAX_AG_STEPS:
        raise MLMProbError(f"AG {name} must be at most {MAX_AG_STEPS:,}, got {limit}")
    K = pc.size
    num = torch.logaddexp(pc.cond_a, pc.cond_b)
    uniform = -2.0 * torch.log(torch.tensor(float(K), dtype=torch.float64)).item()
    log_mu = torch.full((K, K), uniform, dtype=torch.float64)
    objective = [ag_objective(pc, log_mu)] if trace else []
    change, n = float("inf"), 0
    while n < limit:  # n: the iterations run
        n += 1
        la, lb = torch.logsumexp(log_mu, 1), torch.logsumexp(log_mu, 0)
        new = _normalise(num - torch.logaddexp(-la[:, None], -lb[None, :]))
        change = 0.5 * float((new.exp() - log_mu.exp()).abs().sum())
        log_mu = new
        if trace:
            objective.append(ag_objective(pc, log_mu))
        if steps is None and change < tol:
            break
    if not trace:
        objective = [ag_objective(pc, log_mu)]
    return AGResult(log_mu, n, change < tol, change, torch.stack(objective))


def joint_from(pc: PairConditionals, method: str, pivot: tuple[int, int] | None = None) -> torch.Tensor:
    """The log-joint ``[K, K]`` of one ``method`` from precomputed conditionals (checked by :class:`PairJointSpec`)."""
    spec = PairJointSpec(method=method, pivot=pivot)
    return _JOINTS[spec.method](pc, spec.pivot)


# method -> its log-joint from the conditionals (and HCB's pivot), in ``METHODS`` order
_JOINTS = {
    "mlm": lambda pc, pivot: mlm_joint(pc),
    "mrf_logit": lambda pc, pivot: mrf_logit_joint(pc),
    "mrf": lambda pc, pivot: mrf_joint(pc),
    "hcb": lambda pc, pivot: hcb_joint(pc, pivot),
    "ag": lambda pc, pivot: ag_joint(pc).log_joint,
}


def pivot_pair(pivot) -> tuple[int, int]:
    """HCB's ``pivot`` given as a pair of token ids, as a tuple of ints; anything else in one line."""
    try:
        if isinstance(pivot, (str, bytes)) or len(pivot) != 2 or any(isinstance(p, bool) for p in pivot):
            raise TypeError
        return (operator.index(pivot[0]), operator.index(pivot[1]))
    except (TypeError, ValueError):
        raise MLMProbError(
            f"pivot must be a pair of token ids (a_id, b_id) or None (the mode), got {pivot!r}"
        ) from None


@dataclass(frozen=True)
class PairJointSpec(Spec):
    """The settings of :func:`pairwise_joint`: ``method`` (one of :data:`METHODS`) and, for ``"hcb"``, its ``pivot``
    (None: the mode of the MLM joint, or a pair of token ids).

    >>> PairJointSpec(method="mrf", pivot=(0, 0))
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: a pivot only applies to method 'hcb', not 'mrf'
    """

    method: str = "mlm"
    pivot: tuple[int, int] | None = None

    def __post_init__(self):
        if self.method not in METHODS:
            raise MLMProbError(f"unknown pairwise joint method {self.method!r}; use one of {', '.join(METHODS)}")
        if self.pivot is not None:
            if self.method != "hcb":
                raise MLMProbError(f"a pivot only applies to method 'hcb', not {self.method!r}")
            object.__setattr__(self, "pivot", pivot_pair(self.pivot))


def pairwise_joint(
    mlm: MaskedLM, input_ids, a: int, b: int, spec: PairJointSpec | None = None, *, candidates=None, **overrides
) -> torch.Tensor:
    """The normalised log-joint over ``(x_a, x_b)`` given the rest of ``input_ids``: ``[K, K]`` float64 over the
    candidate vocabulary ``V'`` (``candidates``, else the model's proposal ids, else the whole output vocabulary),
    rows indexed by ``x_a``.

    The settings: ``spec``, a :class:`PairJointSpec`, its fields overridden by keyword: ``method`` is ``"mlm"`` (the
    default), ``"mrf"``, ``"mrf_logit"``, ``"hcb"`` (``pivot``: None for the mode of the MLM joint, or a pair of token
    ids) or ``"ag"`` (run to convergence). The values at ``a`` and ``b`` are ignored. Costs ``2K + 1`` batched forward
    rows; use ``pair_conditionals`` once to get every method from the same passes.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> p = torch.tensor([[0.1, 0.2], [0.3, 0.4]])
    >>> m = ExactMLM(p.log())
    >>> pairwise_joint(m, torch.tensor([0, 0]), 0, 1, method="hcb").exp()   # recovers p
    tensor([[0.1000, 0.2000],
            [0.3000, 0.4000]], dtype=torch.float64)
    """
    spec = PairJointSpec.of(spec, **overrides)
    pc = pair_conditionals(mlm, input_ids, a, b, candidates)
    return joint_from(pc, spec.method, spec.pivot)
