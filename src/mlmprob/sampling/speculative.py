"""Speculative ancestral sampling of ``p_sigma``: any-subset speculative decoding (Guo & Ermon 2025) applied to
:mod:`mlmprob.sampling.ancestral`. An epoch draws the free positions along an order ``sigma`` (drawn as the ancestral
sampler draws it) in *rounds* of two sequential calls and ``1 + k`` rows, each revealing ``min(2, r)`` to ``k' + 1``
positions; a round from the prefix ``P`` (``sigma_1..sigma_m`` revealed) with ``r`` left does:

1. **draft** (one row): ``P`` read at the next ``k' = min(k, r)`` positions; ``q_i`` the (tempered, truncated)
   conditional at ``sigma_{m+i}``, drafts ``y_i ~ q_i`` drawn independently (one pass);
2. **verify** (at most ``k`` rows): row ``j = 1..k'`` is ``P`` with ``y_1..y_j`` filled and the rest masked, read at
   ``sigma_{m+j+1}`` (row ``k'`` only if a position is left): ``pi_{j+1} = p_sigma(. | P, y_<=j)``;
3. **accept**: ``y_1`` is kept (``q_1 = pi_1``); ``y_i`` (``i >= 2``) in turn with probability ``min(1, pi_i(y_i) /
   q_i(y_i))``; at the first rejection position ``i`` gets ``z ~ max(0, pi_i - q_i) / rho_i`` and the round ends; if
   all are kept and a position is left, it gets the bonus ``z ~ pi_{k'+1}``.

**Why every draw is exactly ``p_sigma``.** Given all the sampler did before fixing ``x_t`` (the token at
``sigma_t``), ``x_t ~ pi_t(. | x_<t)``: a round's first draft and the bonus are drawn from it; the ``i``-th draft was
drawn from ``q_i`` (a function of ``P``) independently of ``y_<i``, its verification row holds ``P`` and ``y_<i =
x_<t``, and ``q_i(v) min(1, pi_i(v)/q_i(v)) + max(0, pi_i(v) - q_i(v)) = pi_i(v)``. Hence the ratio uses the one-pass
``q_i``, ``pi_i`` conditions on the drafts before ``i`` and masks everything after, a rejection redraws from the
residual (not from ``pi_i``: that would give ``min(q, pi) + rho pi``) and drops the later drafts. ``"random"`` orders
are drawn at the epoch's start (the uniform mixture of the ``p_sigma``); a temperature or ``top_p`` modifies ``q``
and ``pi`` alike.

``log_prob`` sums ``log pi_t(x_t)``: ``log p_sigma(x_S | x_C)`` for the draw's order. The state counts per chain and
epoch the rounds, sequential calls, drafts tested and kept, and rows forwarded.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from ..batching import MaskedCopies, forward_all, read_logits
from ..likelihood.orders import OrderSpec
from ..models.protocol import MaskedLM
from .ancestral import check_order_kernel, epoch_orders
from .kernels import DrawState, Kernel, StepInfo, start_draw
from .options import DEFAULT_DRAFT_K, ProposalConfig
from .proposals import proposal_log_probs, sample_from


@dataclass(frozen=True)
class SpeculativeState(DrawState):
    """A :class:`~mlmprob.sampling.kernels.DrawState` with, during an epoch, ``orders`` ``[B, n]`` (``-1`` padding)
    and ``cursor`` ``[B]`` (None between epochs), and per chain ``tested`` and ``kept`` (drafts after a round's first
    put to the test, and accepted)."""

    orders: torch.Tensor | None = None
    cursor: torch.Tensor | None = None
    tested: torch.Tensor | None = None
    kept: torch.Tensor | None = None


def residual_log_probs(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """``log(max(0, p - q) / sum max(0, p - q))`` row by row (float64); ``log_p`` where ``p <= q``
    everywhere (then no draft is ever rejected, see :func:`accept_probability`)."""
    p, q = log_p.double().exp(), log_q.double().exp()
    r = (p - q).clamp(min=0.0)
    s = r.sum(-1, keepdim=True)
    return torch.where(s > 0, r.log() - s.log(), log_p.double())


def accept_probability(log_p_y: torch.Tensor, log_q_y: torch.Tensor) -> torch.Tensor:
    """``min(1, p(y) / q(y))`` of drafts ``y`` (``q(y) > 0``: they were drawn from ``q``)."""
    return (log_p_y.double() - log_q_y.double()).clamp(max=0.0).exp()


@dataclass(frozen=True, eq=False)
class Speculative(Kernel):
    """Speculative ancestral sampler: ``init(ids, free) -> SpeculativeState``, ``step(state, generator)
    -> (SpeculativeState, StepInfo)``; one step is one round (a draft pass and a verification batch),
    one epoch one exact draw of ``p_sigma`` (see the module docstring)."""

    mlm: MaskedLM
    order: OrderSpec = "random"
    draft_k: int = DEFAULT_DRAFT_K
    proposal: ProposalConfig = ProposalConfig()
    score_all: bool = False
    State = SpeculativeState

    def __post_init__(self):
        check_order_kernel(self, "draft_k")

    def _start(self, state: SpeculativeState, generator: torch.Generator) -> SpeculativeState:
        """Mask the free positions and draw the epoch's orders (one per chain, as ``Ancestral`` draws them)."""
        orders = epoch_orders(state.free, self.order, generator)
        if orders.shape[1] == 0:
            orders = torch.full((orders.shape[0], 1), -1, dtype=torch.long)
        return start_draw(state, self.mlm.mask_id, ("cursor", "rounds", "calls", "tested", "kept"), orders=orders)

    def _read(self, ids, rows, cols, extra=None) -> torch.Tensor:
        """Proposal log-probabilities ``[n, V]`` at ``(rows, cols)`` of ``ids`` (``extra``: also masked)."""
        if extra is None:
            logits = read_logits(self.mlm, ids, rows, cols)
        else:
            one = torch.zeros(ids.shape[0], dtype=torch.long)
            source = MaskedCopies(self.mlm, ids, rows, cols, extra, records=one)
            logits = forward_all(self.mlm, source, torch.arange(len(rows)), cols)
        return proposal_log_probs(logits.float(), self._allowed, self.proposal)

    def step(self, state: SpeculativeState, generator: torch.Generator) -> tuple[SpeculativeState, StepInfo]:
        if state.orders is None:
            state = self._start(state, generator)
        ids, orders, cursor = state.ids, state.orders, state.cursor
        assert orders is not None and cursor is not None and state.log_prob is not None  # set by _start
        # k sizes the round's tensors: clamped to the longest order first (draft_k = 10**9 on 24 positions drafts 24)
        (B, L), k, f64 = ids.shape, min(self.draft_k, orders.shape[1]), torch.float64
        ar = torch.arange(k)
        left = (orders >= 0).sum(1) - cursor  # positions still to reveal
        active = left > 0
        kb = left.clamp(max=k)  # drafts this round
        vb = torch.minimum(kb, (left - 1).clamp(min=0))  # verification rows this round
        dmask = ar[None, :] < kb[:, None]  # [B, k]
        dpos = orders.gather(1, (cursor[:, None] + ar).clamp(max=orders.shape[1] - 1))
        # 1. draft: each chain's row read at its next kb positions (the product of one pass)
        rows, js = dmask.nonzero(as_tuple=True)
        logq_flat = self._read(ids, rows, dpos[rows, js])
        V = logq_flat.shape[1]
        y_flat = sample_from(logq_flat, generator)
        logq = torch.full((B, k + 1, V), float("-inf"), dtype=f64)
        logq[rows, js] = logq_flat
        y = torch.zeros(B, k + 1, dtype=torch.long)
        y[rows, js] = y_flat
        # 2. verify: row j (1..vb) holds the first j drafts, the later ones masked, read at order index j
        logp = torch.full((B, k + 1, V), float("-inf"), dtype=f64)
        logp[:, 0] = logq[:, 0]  # the draft row is the chain-rule row of y_1
        vrows, vj = ((ar + 1)[None, :] <= vb[:, None]).nonzero(as_tuple=True)
        vj = vj + 1
        if len(vrows):
            drafted = ids.clone()
            drafted[rows, dpos[rows, js]] = y_flat
            vcols = orders[vrows, cursor[vrows] + vj]
            later = (ar[None, :] > vj[:, None]) & dmask[vrows]  # drafts after the read one: masked
            extra = torch.zeros(len(vrows), L, dtype=torch.bool)
            r_, i_ = later.nonzero(as_tuple=True)
            extra[r_, dpos[vrows[r_], i_]] = True
            logp[vrows, vj] = self._read(drafted, vrows, vcols, extra)
        # 3. accept drafts 2..kb in turn while min(1, p/q) holds; residual (or bonus) at the stop
        u = torch.rand(B, k + 1, generator=generator, dtype=f64)
        lp_y = logp.gather(2, y[..., None])[..., 0]
        lq_y = logq.gather(2, y[..., None])[..., 0]
        tested_pos = (torch.arange(k + 1)[None, :] >= 1) & (torch.arange(k + 1)[None, :] < kb[:, None])
        rejected = tested_pos & ~(u < accept_probability(lp_y.where(tested_pos, 0.0), lq_y.where(tested_pos, 0.0)))
        any_rej = rejected.any(1)
        stop = torch.where(any_rej, rejected.int().argmax(1), kb)  # index of the residual / bonus draw
        has_z = active & (any_rej | (vb == kb))
        zrows = has_z.nonzero(as_tuple=True)[0]
        lp_s = logp[zrows, stop[zrows]]
        lq_s = torch.where(any_rej[zrows, None], logq[zrows, stop[zrows]], float("-inf"))
        z = sample_from(residual_log_probs(lp_s, lq_s), generator)
        # commit: drafts before the stop, then z at the stop
        keep = torch.arange(k + 1)[None, :] < stop[:, None]
        r_k, i_k = keep.nonzero(as_tuple=True)
        new_ids = ids.clone()
        new_ids[r_k, dpos[r_k, i_k]] = y[r_k, i_k]
        zpos = orders[zrows, cursor[zrows] + stop[zrows]]
        new_ids[zrows, zpos] = z
        log_prob = state.log_prob + lp_y.where(keep, 0.0).sum(1)  # kept drafts: p > 0
        log_prob = log_prob.index_add(0, zrows, logp[zrows, stop[zrows], z])
        n_tested = torch.where(any_rej, stop, (kb - 1).clamp(min=0))
        n_kept = torch.where(any_rej, stop - 1, (kb - 1).clamp(min=0))
        n_calls = active.long() + (vb > 0).long()
        n_fwd = int(active.sum()) + len(vrows)
        new_cursor = cursor + stop + has_z.long()
        end = bool((new_cursor == (orders >= 0).sum(1)).all())
        counted = dict(rounds=active.long(), calls=n_calls, tested=n_tested, kept=n_kept)  # this round's, per chain
        changes: dict[str, Any] = {name: getattr(state, name) + n for name, n in counted.items()}
        changes.update(dict(orders=None, cursor=None, epoch=state.epoch + 1) if end else dict(cursor=new_cursor))
        state = dataclasses.replace(
            state, ids=new_ids, log_prob=log_prob, forward_rows=state.forward_rows + n_fwd, **changes
        )
        # the driver sums these per chain: proposals = drafts tested, accepted = novel = drafts kept
        return state, StepInfo(n_tested, n_kept, n_kept.clone(), torch.zeros(B, dtype=f64), n_fwd, end)
