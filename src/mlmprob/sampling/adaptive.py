"""An adaptive, dependence-aware parallel decoder (masks chosen by measured dependence), as a kernel (one epoch = one
draw of the free positions from all-masked). A step of a chain with masked positions ``M``:

1. **base** row read at ``M``: ``q_i`` and a candidate ``y_i ~ q_i`` at each;
2. **pair** rows (``|M| >= 2``): for every ``j`` in ``M`` and value ``v`` of ``V_j`` (``q_j``'s support, or its
   ``pair_top_k`` most probable), the row with ``x_j = v`` read at ``M - {j}``, giving the dependence
   ``D[i, j] = sum_v w_j(v) KL(q_i(. | x_j = v) || q_i)`` (``decoders.dependence_matrix``): the KL between revealing
   ``j`` then ``i`` and revealing both from one pass;
3. **select** (``decoders.select_adaptive``): by decreasing ``score``, the first position and each later one whose
   dependence with every taken one is below ``threshold`` (at most ``max_tokens``).

Base and pair rows go in one call (two with ``pair_top_k``); a step costs ``1 + m |V_j|`` rows. With ``threshold =
0`` (or ``max_tokens = 1``) and a score of the state alone it is ancestral sampling along an adaptive order (as in
``sampling.unmasking``); for ``threshold > 0`` a step replaces the chain rule on its set ``A`` by the product of one
pass, adding ``D`` for ``|A| = 2`` (``sampling.decoder_exact`` enumerates the law). ``log_prob``, ``revealed_at``,
``rounds`` (steps), ``calls`` as in ``sampling.unmasking``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from ..batching import read_logits
from ..models.protocol import MaskedLM
from .decoders import dependence_matrix, scores, select_adaptive
from .kernels import Kernel, StepInfo
from .options import DEFAULT_THRESHOLD, ProposalConfig, check_adaptive
from .proposals import allowed_ids, proposal_log_probs, sample_from
from .unmasking import DecoderState, commit, score_rows, start_epoch


def pair_choice(logq: torch.Tensor, top_k: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """For proposal rows ``logq`` ``[P, V]``: the values each position is revealed at in the pair rows (bool ``[P,
    V]``: the support, or its ``top_k`` most probable, ties to the lower id) and their weights (``q`` renormalised)."""
    p = logq.double().exp()
    chosen = p > 0
    if top_k is not None:
        rank = torch.sort(-p, dim=1, stable=True).indices.argsort(1)
        chosen &= rank < top_k
    w = p * chosen
    return chosen, w / w.sum(1, keepdim=True)


def pair_reads(
    ids: torch.Tensor, masked: torch.Tensor, pos_b: torch.Tensor, pos_j: torch.Tensor, chosen: torch.Tensor
) -> tuple:
    """The pair rows: for every masked position ``p`` (chain ``pos_b[p]``, position ``pos_j[p]``) and value ``v``
    with ``chosen[p, v]``, the chain's row with ``x_j = v``, read at the chain's other masked positions.
    Returns ``(rows [R, L], read_row [E], read_col [E], p [R], v [R])``."""
    p, v = chosen.nonzero(as_tuple=True)
    rows = ids[pos_b[p]].clone()
    rows[torch.arange(len(p)), pos_j[p]] = v
    others = masked[pos_b[p]].clone()
    others[torch.arange(len(p)), pos_j[p]] = False
    read_row, read_col = others.nonzero(as_tuple=True)
    return rows, read_row, read_col, p, v


@dataclass(frozen=True, eq=False)
class Adaptive(Kernel):
    """Dependence-aware parallel decoder on :class:`~mlmprob.sampling.unmasking.DecoderState`; one epoch is one draw
    (see the module docstring).

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
    >>> k = Adaptive(m, threshold=0.0)
    >>> s = k.init(torch.zeros(4, 3, dtype=torch.long))
    >>> g = torch.Generator().manual_seed(0)
    >>> while s.epoch == 0:
    ...     s, info = k.step(s, g)
    >>> s.rounds.tolist(), torch.allclose(s.log_prob, m.log_prob(s.ids))   # one per step: the joint's chain rule
    ([3, 3, 3, 3], True)
    """

    mlm: MaskedLM
    threshold: float = DEFAULT_THRESHOLD
    score: str = "margin"
    max_tokens: int | None = None
    pair_top_k: int | None = None
    proposal: ProposalConfig = ProposalConfig()
    score_all: bool = False
    State = DecoderState

    def __post_init__(self):
        check_adaptive(self.score, self.threshold, self.max_tokens, self.pair_top_k)
        object.__setattr__(self, "_allowed", allowed_ids(self.mlm))

    def _logq(self, logits: torch.Tensor) -> torch.Tensor:
        return proposal_log_probs(logits.float(), self._allowed, self.proposal)

    def _read(self, ids, masked, rows, cols):
        """Base rows at the masked positions and the pair rows: ``(logq [n, V], score rows [n, V], D [B, L, L],
        rows forwarded, calls [B])``; one model call without ``pair_top_k``, two with it."""
        B, L = ids.shape
        two = masked.sum(1) >= 2  # pair rows only where two are masked
        many, calls = two[rows], masked.any(1).long()
        if self.pair_top_k is None:
            chosen = self._allowed[None, :].expand(len(rows), -1) & many[:, None]
            prow, rr, rc, p, v = pair_reads(ids, masked, rows, cols, chosen)
            logits = read_logits(self.mlm, torch.cat([ids, prow]), torch.cat([rows, rr + B]), torch.cat([cols, rc]))
            logq_all = self._logq(logits)
            logits, logq, given = logits[: len(rows)], logq_all[: len(rows)], logq_all[len(rows) :]
            weight = pair_choice(logq, None)[1]
        else:
            logits = read_logits(self.mlm, ids, rows, cols)
            logq = self._logq(logits)
            chosen, weight = pair_choice(logq, self.pair_top_k)
            prow, rr, rc, p, v = pair_reads(ids, masked, rows, cols, chosen & many[:, None])
            given = self._logq(read_logits(self.mlm, prow, rr, rc)) if len(rr) else logq[:0]
            calls = calls + two.long()
        index = torch.full((B, L), -1, dtype=torch.long)
        index[rows, cols] = torch.arange(len(rows))
        b_e, j_e = rows[p[rr]], cols[p[rr]]
        D = dependence_matrix(B, L, b_e, rc, j_e, weight[p[rr], v[rr]], given, logq[index[b_e, rc]])
        slq = score_rows(logits.float(), logq, self._allowed, self.proposal)
        return logq, slq, D, int(masked.any(1).sum()) + len(prow), calls

    def step(self, state: DecoderState, generator: torch.Generator) -> tuple[DecoderState, StepInfo]:
        if state.cursor is None:
            state = start_epoch(self.mlm, state)
        ids = state.ids
        masked = state.free & (ids == self.mlm.mask_id)
        active = masked.any(1)
        rows, cols = masked.nonzero(as_tuple=True)
        logq, slq, D, n_fwd, calls = self._read(ids, masked, rows, cols)
        cand = sample_from(logq, generator)
        score = torch.zeros(ids.shape, dtype=torch.float64)
        score[rows, cols] = scores(slq, cand, self.score)
        reveal = select_adaptive(score, masked, D, self.threshold, self.max_tokens)
        end = bool((masked & ~reveal).sum() == 0)
        state, info = commit(state, reveal, rows, cols, logq, cand, active, end)
        assert state.calls is not None  # set by start_epoch
        state = dataclasses.replace(
            state,
            calls=state.calls - active.long() + calls,
            forward_rows=state.forward_rows - info.forward_rows + n_fwd,
        )
        return state, dataclasses.replace(info, forward_rows=n_fwd)
