"""The pure rules of the parallel decoders (``sampling.unmasking``, ``sampling.adaptive``), shared by their kernels and
the exact enumerator (``sampling.decoder_exact``), so the enumerated law is the kernels' law; no model, no generator.

- **Scores** (higher first) of a masked position from its proposal ``q_i`` and candidate ``y_i``: ``"confidence"``
  ``log q_i(y_i)`` (MaskGIT, LLaDA), ``"margin"`` top-1 minus top-2 probability, ``"entropy"`` ``-H(q_i)`` (Dream).
  A greedy proposal's scores read the temperature-1 rows (:func:`score_config`). Ties go to the lowest position.
- **Schedules**: ``n`` positions in ``S' = min(S, n)`` steps of at least one: ``"linear"`` (counts differ by at most
  one), ``"cosine"`` (MaskGIT: ``floor(n cos(pi t / 2S'))`` left masked after step ``t``, clamped).
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from ..errors import MLMProbError
from .options import SCHEDULES, SCORES, ProposalConfig


def scores(logq: torch.Tensor, cand: torch.Tensor, kind: str) -> torch.Tensor:
    """Scores ``[n]`` (float64) of rows ``logq`` ``[n, V]`` (proposal log-probabilities) and candidates ``[n]``."""
    lq = logq.double()
    if kind == "confidence":
        return lq.gather(1, cand[:, None])[:, 0]
    p = lq.exp()
    if kind == "margin":
        top = p.topk(min(2, p.shape[1]), dim=1).values
        return top[:, 0] - (top[:, 1] if top.shape[1] > 1 else 0.0)
    if kind == "entropy":
        return torch.where(p > 0, p * lq, torch.zeros_like(p)).sum(1)
    raise MLMProbError(f"score must be one of {SCORES}, got {kind!r}")


def score_config(proposal: ProposalConfig) -> ProposalConfig:
    """The distribution the scores read: the proposal, or at temperature 0 the temperature-1 one (nucleus kept)."""
    return proposal if proposal.temperature > 0 else ProposalConfig(1.0, proposal.top_p)


@lru_cache(maxsize=4096)
def reveal_counts(n: int, steps: int, schedule: str = "linear") -> tuple[int, ...]:
    """How many of ``n`` masked positions each of ``min(steps, n)`` steps reveals (they sum to ``n``)."""
    if schedule not in SCHEDULES:
        raise MLMProbError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    s = min(steps, n)
    if schedule == "linear":
        return tuple((t + 1) * n // s - t * n // s for t in range(s))
    left, out = n, []
    for t in range(1, s + 1):
        raw = math.floor(n * math.cos(math.pi * t / (2 * s))) if t < s else 0
        m = max(min(raw, left - 1), s - t)
        out.append(left - m)
        left = m
    return tuple(out)


def block_steps(sizes: list[int], steps: int) -> list[int]:
    """Steps of each semi-autoregressive block: ``steps`` split as evenly as possible over the blocks (the
    earlier blocks take the remainder), at least one and at most the block's size each."""
    nb = len(sizes)
    return [max(1, min(size, steps // nb + (k < steps % nb))) for k, size in enumerate(sizes)]


def _pattern_plan(free_row: tuple[bool, ...], steps: int, schedule: str, block_length: int | None):
    pos = [i for i, f in enumerate(free_row) if f]
    blocks = [pos] if block_length is None else [pos[k : k + block_length] for k in range(0, len(pos), block_length)]
    blocks = [b for b in blocks if b]
    out = []
    for block, s in zip(blocks, block_steps([len(b) for b in blocks], steps), strict=True):
        out += [(block, c) for c in reveal_counts(len(block), s, schedule)]
    return out


def unmask_plan(
    free: torch.Tensor, steps: int, schedule: str = "linear", block_length: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The unmasking steps of one epoch: ``windows`` bool ``[S, B, L]`` (the positions step ``s`` may reveal
    from: the chain's free positions, or its current block of ``block_length`` free positions, left to right)
    and ``counts`` long ``[S, B]`` (how many it reveals; 0 once a chain is done). A function of ``free`` only."""
    B, L = free.shape
    patterns, inverse = torch.unique(free, dim=0, return_inverse=True)
    plans = [_pattern_plan(tuple(p.tolist()), steps, schedule, block_length) for p in patterns]
    S = max((len(p) for p in plans), default=0)
    win_p = torch.zeros(S, len(plans), L, dtype=torch.bool)
    cnt_p = torch.zeros(S, len(plans), dtype=torch.long)
    for k, plan in enumerate(plans):
        for s, (block, c) in enumerate(plan):
            win_p[s, k, block] = True
            cnt_p[s, k] = c
    return win_p[:, inverse], cnt_p[:, inverse]


def ranking(score: torch.Tensor, eligible: torch.Tensor) -> torch.Tensor:
    """Rank ``[B, L]`` of each position by decreasing score among the eligible ones (0 = first; ties to the
    lowest position; the ineligible after every eligible one)."""
    key = score.double().masked_fill(~eligible, float("-inf"))
    order = torch.sort(key, dim=1, descending=True, stable=True).indices
    # the ineligible last even against eligible -inf scores
    order = torch.gather(order, 1, torch.sort((~eligible).gather(1, order).int(), dim=1, stable=True).indices)
    return order.argsort(1)


def select_top(score: torch.Tensor, eligible: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Bool ``[B, L]``: the ``count[b]`` eligible positions of row ``b`` with the highest scores (ties to the
    lowest position)."""
    return eligible & (ranking(score, eligible) < count[:, None])


def dependence_matrix(
    B: int,
    L: int,
    b: torch.Tensor,
    i: torch.Tensor,
    j: torch.Tensor,
    weight: torch.Tensor,
    logq_given: torch.Tensor,
    logq_base: torch.Tensor,
) -> torch.Tensor:
    """``D`` ``[B, L, L]`` (float64): ``D[b, i, j] = sum_v w_j(v) KL(q_i(. | x_j = v) || q_i)``, the expected
    information revealing ``j`` gives about ``i`` (for the conditionals of a joint: the conditional mutual
    information of ``x_i`` and ``x_j``; in any case the KL from drawing ``j`` then ``i`` to drawing both from one
    pass). Entry ``e`` is one read: chain ``b[e]``, read position ``i[e]``, revealed ``j[e] = v`` with weight
    ``weight[e] = w_j(v)``, its row ``logq_given[e]`` and the base row ``logq_base[e]`` (``q_i``, ``j`` masked).
    Zero weights add nothing (even against an infinite KL)."""
    lp, lq = logq_given.double(), logq_base.double()
    kl = torch.where(lp > float("-inf"), lp.exp() * (lp - lq), torch.zeros_like(lp)).sum(-1)  # inf off q's support
    contrib = torch.where(weight > 0, weight.double() * kl, torch.zeros_like(kl))
    D = torch.zeros(B, L, L, dtype=torch.float64)
    return D.index_put_((b, i, j), contrib, accumulate=True)


def select_adaptive(
    score: torch.Tensor, eligible: torch.Tensor, dep: torch.Tensor, threshold: float, max_tokens: int | None = None
) -> torch.Tensor:
    """Bool ``[B, L]``: the greedy dependence-aware set. The eligible positions are visited by decreasing score
    (ties to the lowest position); the first is always taken, each later one only if its dependence with every
    position taken, ``max(dep[i, c], dep[c, i])``, is *strictly* below ``threshold`` (and fewer than
    ``max_tokens`` are taken). ``threshold = 0`` takes exactly one position per step."""
    B, L = eligible.shape
    sym = torch.maximum(dep, dep.transpose(1, 2))
    order = ranking(score, eligible).argsort(1)  # order[b, r]: the r-th visited position
    taken = torch.zeros(B, L, dtype=torch.bool)
    n = torch.zeros(B, dtype=torch.long)
    cap = L if max_tokens is None else max_tokens
    ar = torch.arange(B)
    for r in range(L):
        p = order[:, r]
        worst = sym[ar, p].masked_fill(~taken, float("-inf")).amax(1)  # against the taken ones
        ok = eligible[ar, p] & ((n == 0) | (worst < threshold)) & (n < cap)
        taken[ar[ok], p[ok]] = True
        n += ok.long()
    return taken
