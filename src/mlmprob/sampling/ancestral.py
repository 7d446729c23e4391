"""Ancestral sampling of the chain-rule distributions ``p_sigma`` of ``mlmprob.loglik``: an epoch masks the free
positions and fills them one step at a time along ``sigma``, each from the model's conditional given what is
revealed; exact draws of ``p_sigma`` (``"l2r"``, ``"r2l"``, a given order) or of the mixture over orders
(``"random"``: a fresh order per chain and epoch). ``log_prob``: the draw's log-probability along its order (under
the tempered or truncated conditionals when the proposal is). ``tokens_per_step = k > 1`` reveals ``k`` positions per
step from one row (parallel decoding, Li et al. 2024: approximate; ``log_prob`` the product of the conditionals used).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..batching import read_logits
from ..errors import MLMProbError
from ..likelihood.orders import ORDER_KINDS, OrderSpec, plan_orders
from ..models.protocol import MaskedLM
from .kernels import DrawState, Kernel, StepInfo, advance, start_draw
from .options import ProposalConfig, check_positive_int
from .proposals import allowed_ids, proposal_log_probs, sample_from


@dataclass(frozen=True)
class AncestralState(DrawState):
    """A :class:`~mlmprob.sampling.kernels.DrawState` with ``plan`` ``[S, B, L]`` (the epoch's steps, None between
    epochs) and ``cursor``; ``rounds`` = ``calls`` (one call a step)."""

    plan: torch.Tensor | None = None
    cursor: int = 0


def step_plan(orders: torch.Tensor, L: int, tokens_per_step: int) -> torch.Tensor:
    """Bool ``[S, B, L]``: step ``s`` of chain ``b`` reveals positions ``orders[b, s*k:(s+1)*k]``
    (``orders`` ``[B, n]``, ``-1`` padding)."""
    B, n = orders.shape
    S = max(1, -(-n // tokens_per_step))
    plan = torch.zeros(S, B, L + 1, dtype=torch.bool)
    j = torch.arange(n).expand(B, n)
    b = torch.arange(B)[:, None].expand(B, n)
    plan[j // tokens_per_step, b, torch.where(orders >= 0, orders, L)] = True
    return plan[..., :L]


def check_order_kernel(kernel, count: str) -> None:
    """The checks an order-driven kernel (``Ancestral``, ``Speculative``) makes once: ``order`` is a kind or
    explicit orders, its field ``count`` a positive integer; it keeps the ids a draw may take."""
    if isinstance(kernel.order, str) and kernel.order not in ORDER_KINDS:
        raise MLMProbError(f"order must be one of {ORDER_KINDS} or explicit orders, got {kernel.order!r}")
    check_positive_int(getattr(kernel, count), count)
    object.__setattr__(kernel, "_allowed", allowed_ids(kernel.mlm))


def epoch_orders(free: torch.Tensor, order: OrderSpec, generator: torch.Generator) -> torch.Tensor:
    """An epoch's order of each chain ``[B, n]`` over its ``free`` positions: one of the chain's planned orders,
    picked uniformly (one draw per chain) when it has several."""
    plan = plan_orders(free, None, order, 1, generator)
    B = plan.orders.shape[0]
    pick = (
        (torch.rand(B, generator=generator, dtype=torch.float64) * plan.n_orders).long()
        if int(plan.n_orders.max()) > 1
        else torch.zeros(B, dtype=torch.long)
    )
    return plan.orders[torch.arange(B), pick]


@dataclass(frozen=True, eq=False)
class Ancestral(Kernel):
    """Ancestral (chain-rule) sampler: ``init(ids, free) -> AncestralState``, ``step(state, generator)
    -> (AncestralState, StepInfo)``; one epoch is one complete draw of the free positions.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> k = Ancestral(m, order="l2r")
    >>> s = k.init(torch.zeros(3, 2, dtype=torch.long))
    >>> g = torch.Generator().manual_seed(0)
    >>> s, info = k.step(s, g)
    >>> s, info = k.step(s, g)
    >>> info.end_of_epoch, s.epoch
    (True, 1)
    >>> torch.allclose(s.log_prob, m.log_prob(s.ids))       # exact marginals: p_l2r is the joint
    True
    """

    mlm: MaskedLM
    order: OrderSpec = "random"
    tokens_per_step: int = 1
    proposal: ProposalConfig = ProposalConfig()
    score_all: bool = False
    State = AncestralState

    def __post_init__(self):
        check_order_kernel(self, "tokens_per_step")

    def _start(self, state: AncestralState, generator: torch.Generator) -> AncestralState:
        """Mask the free positions and draw the epoch's orders (one per chain)."""
        plan = step_plan(epoch_orders(state.free, self.order, generator), state.ids.shape[1], self.tokens_per_step)
        return start_draw(state, self.mlm.mask_id, plan=plan, cursor=0)

    def step(self, state: AncestralState, generator: torch.Generator) -> tuple[AncestralState, StepInfo]:
        if state.plan is None:
            state = self._start(state, generator)
        assert state.plan is not None and state.log_prob is not None and state.rounds is not None  # set by _start
        block = state.plan[state.cursor]
        rows, cols = block.nonzero(as_tuple=True)
        # the revealed tokens and the masks are in the rows already: each chain's row is read at its step
        logits = read_logits(self.mlm, state.ids, rows, cols).float()
        logq = proposal_log_probs(logits, self._allowed, self.proposal)
        new = sample_from(logq, generator)
        ids = state.ids.clone()
        ids[rows, cols] = new
        log_prob = state.log_prob.index_add(0, rows, logq.gather(1, new[:, None])[:, 0])
        active = block.any(-1)
        n_fwd = int(active.sum())  # one row per chain, read at its k positions
        steps = state.rounds + active.long()
        state, end = advance(
            state, ids=ids, log_prob=log_prob, forward_rows=state.forward_rows + n_fwd, rounds=steps, calls=steps
        )
        return state, StepInfo.drawn(active, n_fwd, end)
