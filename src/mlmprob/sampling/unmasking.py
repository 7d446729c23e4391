"""Confidence-ordered unmasking (MaskGIT, LLaDA, Dream) with a step schedule, semi-autoregressive blocks and
ReMDM-style remasking, as a kernel (one epoch = one draw of the free positions from all-masked): the plan of
``decoders.unmask_plan``, step ``s`` reading the row once at the masked positions of its window, drawing a candidate
``y_i ~ q_i`` at each and revealing the ``n_s`` best by ``decoders.scores`` (ties to the lowest position); then
``remask_steps`` ReMDM steps (Wang et al. 2025, "loop"): every free position masked again with probability
``remask``, the masked ones redrawn from one pass (none: no call).

One position per step with a score of the state alone (``"margin"``, ``"entropy"``) is ancestral sampling along an
adaptive order, ``P(x) = p_{sigma(x)}(x)`` (the joint for compatible conditionals); ``"confidence"`` biases every
revealed token towards the mode; fewer steps than positions: no statement (``sampling.decoder_exact`` enumerates the
law). ``log_prob`` ``[B]``: the sum of each final token's log-probability under the conditional it was last drawn
from; ``revealed_at`` ``[B, L]``: the step of each final token (-1: not free); ``rounds`` = ``calls``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from ..batching import read_logits
from ..models.protocol import MaskedLM
from .decoders import score_config, scores, select_top, unmask_plan
from .kernels import DrawState, Kernel, StepInfo, start_draw
from .options import DEFAULT_STEPS, ProposalConfig, check_unmasking
from .proposals import allowed_ids, proposal_log_probs, sample_from


@dataclass(frozen=True)
class DecoderState(DrawState):
    """A :class:`~mlmprob.sampling.kernels.DrawState` with, during an epoch, ``cursor`` (None between epochs) and the
    plan (``windows`` ``[S, B, L]``, ``counts`` ``[S, B]``); ``token_log_prob`` and ``revealed_at`` ``[B, L]``."""

    cursor: int | None = None
    windows: torch.Tensor | None = None
    counts: torch.Tensor | None = None
    token_log_prob: torch.Tensor | None = None
    revealed_at: torch.Tensor | None = None


def start_epoch(mlm: MaskedLM, state: DecoderState, **plan) -> DecoderState:
    """Mask the free positions; zero the epoch's counters."""
    shape = state.ids.shape
    at = torch.full(shape, -1, dtype=torch.long)
    tlp = torch.zeros(shape, dtype=torch.float64)
    return start_draw(state, mlm.mask_id, cursor=0, token_log_prob=tlp, revealed_at=at, **plan)


def draw_at(
    mlm: MaskedLM, ids: torch.Tensor, where: torch.Tensor, allowed, proposal: ProposalConfig, generator: torch.Generator
):
    """One model call: each row of ``ids`` with a position in ``where`` read there. Returns ``(rows, cols,
    logq [n, V] float64, candidates [n], the rows the scores read)``; the chains of one call are one record."""
    rows, cols = where.nonzero(as_tuple=True)
    logits = read_logits(mlm, ids, rows, cols).float()
    logq = proposal_log_probs(logits, allowed, proposal)
    return rows, cols, logq, sample_from(logq, generator), score_rows(logits, logq, allowed, proposal)


def score_rows(logits: torch.Tensor, logq: torch.Tensor, allowed, proposal: ProposalConfig) -> torch.Tensor:
    """The rows the scores read (``decoders.score_config``): ``logq`` unless the proposal is greedy."""
    return logq if proposal.temperature > 0 else proposal_log_probs(logits, allowed, score_config(proposal))


def commit(
    state: DecoderState, reveal: torch.Tensor, rows, cols, logq, cand, active: torch.Tensor, end: bool
) -> tuple[DecoderState, StepInfo]:
    """Reveal the candidates at ``reveal`` (among ``rows, cols``), count one call per active chain."""
    assert state.token_log_prob is not None and state.revealed_at is not None  # set by start_epoch
    assert state.cursor is not None and state.rounds is not None and state.calls is not None
    keep = reveal[rows, cols]
    r, c = rows[keep], cols[keep]
    ids, tlp, at = state.ids.clone(), state.token_log_prob.clone(), state.revealed_at.clone()
    ids[r, c] = cand[keep]
    tlp[r, c] = logq[keep].gather(1, cand[keep][:, None])[:, 0]
    at[r, c] = state.cursor
    n_fwd = int(active.sum())
    out: dict[str, Any] = dict(
        ids=ids,
        token_log_prob=tlp,
        log_prob=tlp.sum(1),
        revealed_at=at,
        rounds=state.rounds + active,
        calls=state.calls + active,
        forward_rows=state.forward_rows + n_fwd,
        cursor=state.cursor + 1,
    )
    if end:
        out.update(cursor=None, epoch=state.epoch + 1)
    return dataclasses.replace(state, **out), StepInfo.drawn(active, n_fwd, end)


@dataclass(frozen=True, eq=False)
class Unmasking(Kernel):
    """Confidence-ordered unmasking with remasking: ``init(ids, free) -> DecoderState``, ``step(state,
    generator) -> (DecoderState, StepInfo)``; one epoch is one draw (see the module docstring).

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
    >>> k = Unmasking(m, score="margin", steps=3)
    >>> s = k.init(torch.zeros(4, 3, dtype=torch.long))
    >>> g = torch.Generator().manual_seed(0)
    >>> while s.epoch == 0:
    ...     s, info = k.step(s, g)
    >>> s.calls.tolist(), torch.allclose(s.log_prob, m.log_prob(s.ids))   # one per step: the joint's chain rule
    ([3, 3, 3, 3], True)
    """

    mlm: MaskedLM
    score: str = "confidence"
    steps: int = DEFAULT_STEPS
    schedule: str = "linear"
    block_length: int | None = None
    remask: float = 0.0
    remask_steps: int = 0
    proposal: ProposalConfig = ProposalConfig()
    score_all: bool = False
    State = DecoderState

    def __post_init__(self):
        check_unmasking(self.score, self.steps, self.schedule, self.block_length, self.remask, self.remask_steps)
        object.__setattr__(self, "_allowed", allowed_ids(self.mlm))

    def plan(self, free: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The epoch's unmasking steps (``decoders.unmask_plan``)."""
        return unmask_plan(free, self.steps, self.schedule, self.block_length)

    def step(self, state: DecoderState, generator: torch.Generator) -> tuple[DecoderState, StepInfo]:
        if state.cursor is None:
            windows, counts = self.plan(state.free)
            state = start_epoch(self.mlm, state, windows=windows, counts=counts)
        assert state.windows is not None and state.counts is not None and state.cursor is not None  # set by start_epoch
        S, s = state.windows.shape[0], state.cursor
        end = s + 1 >= S + self.remask_steps
        if s < S:
            eligible = state.windows[s] & (state.ids == self.mlm.mask_id)
            count = state.counts[s]
            active = count > 0
            eligible &= active[:, None]
            rows, cols, logq, cand, slq = draw_at(
                self.mlm, state.ids, eligible, self._allowed, self.proposal, generator
            )
            score = torch.zeros(state.ids.shape, dtype=torch.float64)
            score[rows, cols] = scores(slq, cand, self.score)
            reveal = select_top(score, eligible, count)
            return commit(state, reveal, rows, cols, logq, cand, active, end)
        # a remasking step: every free position masked again with probability `remask`, all redrawn
        u = torch.rand(state.ids.shape, generator=generator, dtype=torch.float64)
        again = state.free & (u < self.remask)
        ids = state.ids.masked_fill(again, self.mlm.mask_id)
        rows, cols, logq, cand, _ = draw_at(self.mlm, ids, again, self._allowed, self.proposal, generator)
        return commit(dataclasses.replace(state, ids=ids), again, rows, cols, logq, cand, again.any(1), end)
