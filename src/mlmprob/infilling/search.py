"""The search engine of beam search and the sampling baselines: hypotheses ``filled [H, k]`` (-1: not yet) with
``score [H]``, one step per gap position. Each step reads every hypothesis with its unfilled positions holding
``correction.fill_id`` (the mask: one row serves all its positions; a token: one row per position) and the position
to fill masked; ``l2r`` fills gap position ``step``, ``best`` the unfilled position whose best candidate has the
highest ``log q`` (ties: leftmost). Extension ``(h, w)`` scores ``score[h] + log q(w | input) - correction(logp)``;
a state reached twice keeps its higher score; ``select`` keeps ``width``. Fills come from ``gap.candidates``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch

from ..batching import read_logits
from ..models.protocol import MaskedLM
from .gap import Gap, InfillCandidate

NEG_INF = float("-inf")


class Correction(Protocol):
    fill_id: int | None

    def __call__(self, logp: torch.Tensor) -> torch.Tensor: ...  # pragma: no cover - protocol


# select(scores [E], cand_logp [E], parent [E], n_parents, width) -> indices into E
Select = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int, int], torch.Tensor]


def top_k_select(
    scores: torch.Tensor, cand_logp: torch.Tensor, parent: torch.Tensor, n_parents: int, width: int
) -> torch.Tensor:
    """Beam search: the ``width`` best-scoring extensions."""
    return torch.topk(scores, min(width, scores.numel())).indices


def _step_inputs(
    gap: Gap, mask_id: int, filled: torch.Tensor, fill_id: int | None, masked_col: torch.Tensor | None
) -> torch.Tensor:
    """Rows ``[R, L]``: ``filled`` written in, unfilled positions ``fill_id`` (or the mask), ``masked_col`` masked."""
    vals = torch.where(filled >= 0, filled, mask_id if fill_id is None else fill_id)
    if masked_col is not None:
        vals[torch.arange(len(vals)), masked_col] = mask_id
    ids = gap.ids.repeat(len(vals), 1)
    ids[:, gap.positions] = vals
    return ids


def query_logp(
    mlm: MaskedLM, gap: Gap, filled: torch.Tensor, q_h: torch.Tensor, q_u: torch.Tensor, fill_id: int | None
) -> torch.Tensor:
    """``log q`` ``[Q, V]`` (float64) at gap column ``q_u[i]`` of hypothesis ``q_h[i]`` (that
    column masked, unfilled ones holding ``fill_id``/the mask). ``q_h`` must be sorted."""
    if fill_id is None:  # one row per hypothesis serves all its queries
        rows = _step_inputs(gap, mlm.mask_id, filled, None, None)
        row_of = q_h
    else:  # one row per query
        rows = _step_inputs(gap, mlm.mask_id, filled[q_h], fill_id, q_u)
        row_of = torch.arange(len(q_h))
    cols = gap.positions[q_u]
    # the hypotheses of one gap's search are one record: its sub-batches depend on nothing else
    return read_logits(mlm, rows, row_of, cols).double().log_softmax(-1)


def _first_argmax_per_group(values: torch.Tensor, group: torch.Tensor, n_groups: int) -> torch.Tensor:
    """Index of the first maximum of ``values`` within each group (every group non-empty)."""
    best = torch.full((n_groups,), NEG_INF, dtype=values.dtype).scatter_reduce(0, group, values, "amax")
    hit = values == best[group]
    idx = torch.arange(len(values))
    return torch.full((n_groups,), len(values)).scatter_reduce(0, group[hit], idx[hit], "amin")


def run_search(
    mlm: MaskedLM, gap: Gap, *, width: int, order: str, correction: Correction, select: Select = top_k_select
) -> list[InfillCandidate]:
    """Fill ``gap`` one position at a time keeping ``width`` hypotheses; best first."""
    k, cand = gap.k, gap.candidates
    n = len(cand)
    filled = torch.full((1, k), -1, dtype=torch.long)
    score = torch.zeros(1, dtype=torch.float64)
    for step in range(k):
        H = filled.shape[0]
        if order == "l2r":
            q_h, q_u = torch.arange(H), torch.full((H,), step, dtype=torch.long)
        else:
            q_h, q_u = (filled < 0).nonzero(as_tuple=True)
        logp = query_logp(mlm, gap, filled, q_h, q_u, correction.fill_id)
        clp = logp[:, cand]
        if order == "best":
            pick = _first_argmax_per_group(clp.max(-1).values, q_h, H)
            q_h, q_u, logp, clp = q_h[pick], q_u[pick], logp[pick], clp[pick]
        ext = (score[q_h, None] + clp - correction(logp)[:, None]).flatten()  # [Q * n]
        parent = q_h.repeat_interleave(n)
        new = filled[parent].clone()
        new[torch.arange(len(new)), q_u.repeat_interleave(n)] = cand.repeat(len(q_h))
        flat_clp = clp.flatten()
        if order == "best" and step > 0:  # one state reached through two orders: keep the better
            _, inv = torch.unique(new, dim=0, return_inverse=True)
            keep = _first_argmax_per_group(ext, inv, int(inv.max()) + 1).sort().values
            ext, parent, new, flat_clp = ext[keep], parent[keep], new[keep], flat_clp[keep]
        idx = select(ext, flat_clp, parent, H, width)
        filled, score = new[idx], ext[idx]
    order_ = torch.argsort(score, descending=True, stable=True)[:width]
    return [InfillCandidate(tuple(filled[i].tolist()), float(score[i])) for i in order_]
