"""Exhaustive references for small ``n**k``, independent of the beam search code: ``exhaustive_infill`` (what beam
search in ``l2r`` order with a beam of ``n**k`` must return) and ``exact_infill`` (exact ``log p(fill | context)``)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch

from ..batching import read_logits
from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from ..models.reader import reader_of
from .beam import make_correction
from .gap import InfillCandidate, prepare_gap

MAX_FILLS = 200_000


def enumerate_fills(candidates: torch.Tensor, k: int) -> torch.Tensor:
    """Every fill ``[n**k, k]`` in lexicographic order of candidate index."""
    n = len(candidates)
    if n**k > MAX_FILLS:
        raise MLMProbError(f"exhaustive search over {n}**{k} = {n**k} fills is too large (limit {MAX_FILLS})")
    idx = torch.tensor(list(itertools.product(range(n), repeat=k)), dtype=torch.long).reshape(-1, k)
    return candidates[idx]


def _sorted(fills: torch.Tensor, scores: torch.Tensor, top: int | None) -> list[InfillCandidate]:
    order = torch.argsort(scores, descending=True, stable=True)[:top]
    return [InfillCandidate(tuple(fills[i].tolist()), float(scores[i])) for i in order]


def exhaustive_infill(
    mlm: MaskedLM,
    input_ids,
    positions: Sequence[int] | torch.Tensor,
    *,
    method: str = "standard",
    pivot: int | None = None,
    top: int | None = None,
) -> list[InfillCandidate]:
    """All fills (or the ``top`` best) by their left-to-right ``method`` score, best first."""
    correction = make_correction(mlm, method, pivot)
    gap = prepare_gap(mlm, input_ids, positions)
    fills = enumerate_fills(gap.candidates, gap.k)
    N, k = fills.shape
    fill_other = mlm.mask_id if correction.fill_id is None else correction.fill_id
    scores = torch.zeros(N, dtype=torch.float64)
    for j in range(k):  # factor j: gap[<j] = fill, gap[j] = mask, gap[>j] = fill_other
        rows = gap.ids.repeat(N, 1)
        for i, p in enumerate(gap.positions.tolist()):
            rows[:, p] = fills[:, i] if i < j else (mlm.mask_id if i == j else fill_other)
        col = int(gap.positions[j])
        logp = read_logits(mlm, rows, torch.arange(N), torch.full((N,), col))
        logp = logp.double().log_softmax(-1)
        scores += logp.gather(1, fills[:, j : j + 1])[:, 0] - correction(logp)
    return _sorted(fills, scores, top)


def exact_infill(
    mlm: MaskedLM, input_ids, positions: Sequence[int] | torch.Tensor, *, top: int | None = None
) -> list[InfillCandidate]:
    """All fills by exact ``log p(fill | context)`` under a model with ``log_prob`` (e.g.
    ``ExactMLM``), normalised over the candidate fills, best first.

    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> [(c.tokens, round(c.score, 4)) for c in exact_infill(m, [1, 2], [1])]   # p(x2 | x1 = 1)
    [((1,), -0.5596), ((0,), -0.8473)]
    """
    log_prob = getattr(reader_of(mlm).wrapped, "log_prob", None)
    if log_prob is None:
        raise MLMProbError("exact_infill needs a model with an exact joint (a log_prob method, e.g. ExactMLM)")
    gap = prepare_gap(mlm, input_ids, positions)
    fills = enumerate_fills(gap.candidates, gap.k)
    rows = gap.ids.repeat(len(fills), 1)
    rows[:, gap.positions] = fills
    if (rows == mlm.mask_id).any():
        raise MLMProbError("exact_infill needs every position outside the gap to hold a token (no masks)")
    lp = log_prob(rows).double()
    return _sorted(fills, lp - torch.logsumexp(lp, 0), top)
