"""Mask-predict (Ghazvininejad et al. 2019): iteration 0 fills every free position with its arg-max; iteration
``t = 1..N-1`` re-predicts the ``floor(T (N - t) / N)`` least confident free positions from one pass. Easy-first
(Kasai et al. 2020): every later iteration re-predicts each free position ``i`` from a copy with ``i`` and every
less confident position masked, then re-ranks. Positions that are not free never change.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from ..batching import iter_masked_logits
from ..energies import Positions, as_input_ids
from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from ..positions import WORDS_AND_MASKS, Resolved
from ..settings import check_known
from .forward import block_logits
from .init import resolve_free
from .kernels import DrawState, Kernel, StepInfo
from .options import DEFAULT_ITERATIONS, STRATEGIES, ProposalConfig, check_iterations
from .proposals import allowed_ids, proposal_log_probs


@dataclass(frozen=True)
class MaskPredictResult:
    """``ids`` ``[B, L]`` after the last iteration, ``confidence`` ``[B, L]`` (float64 log-probability
    of each free token when it was last predicted, 0 elsewhere), ``history`` ``[N, B, L]`` (the ids
    after each iteration), ``free`` bool ``[B, L]``, ``forward_rows``."""

    ids: torch.Tensor
    confidence: torch.Tensor
    history: torch.Tensor
    free: torch.Tensor
    forward_rows: int


def _greedy(logits: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    lp = proposal_log_probs(logits, allowed, ProposalConfig())
    conf, tok = lp.max(-1)
    return tok, conf


def mask_predict(
    mlm: MaskedLM, init_ids, iterations: int, positions: Positions = None, *, strategy: str = "mask_predict", **unknown
) -> MaskPredictResult:
    """Fill the free positions of ``init_ids`` (token ids ``[B, L]``, or text: a sequence or a list of sequences,
    :func:`~mlmprob.energies.as_input_ids`; the free positions' current tokens are ignored) in
    ``iterations`` rounds of greedy refinement; another keyword is refused in one line naming these.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> r = mask_predict(m, torch.tensor([[0, 0]]), iterations=2)
    >>> r.ids.tolist(), tuple(r.history.shape)
    ([[1, 1]], (2, 1, 2))
    """
    check_known("mask_predict", unknown, ("iterations", "positions", "strategy"))
    if strategy not in STRATEGIES:
        raise MLMProbError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    check_iterations(iterations)  # each round is a sequential call and a kept copy of the ids
    ids = as_input_ids(mlm, init_ids, "init_ids")
    free = resolve_free(mlm, ids, positions)
    allowed = allowed_ids(mlm)
    ids = ids.clone()
    conf = torch.zeros(ids.shape, dtype=torch.float64)
    history, rows_fwd, n_free = [], 0, free.sum(-1)
    for t in range(iterations):
        if t == 0 or strategy == "mask_predict":  # iteration 0 fills every free position
            n = (n_free * (iterations - t)) // iterations  # linear decay
            key = conf.masked_fill(~free, float("inf"))
            rank = key.argsort(dim=-1, stable=True).argsort(dim=-1)  # 0 = least confident
            remask = free & (rank < n[:, None])
            logits, k = block_logits(mlm, ids, remask)
            tok, c = _greedy(logits, allowed)
            ids[remask], conf[remask] = tok, c
        else:
            key = (-conf).masked_fill(~free, float("inf"))
            rank = key.argsort(dim=-1, stable=True).argsort(dim=-1)  # 0 = most confident
            rows, cols = free.nonzero(as_tuple=True)
            harder = free[rows] & (rank[rows] > rank[rows, cols][:, None])  # [N, L]
            new_tok = torch.empty(len(rows), dtype=torch.long)
            new_conf = torch.empty(len(rows), dtype=torch.float64)
            k = 0
            for idx, logits in iter_masked_logits(mlm, ids, rows, cols, extra_mask=harder):
                new_tok[idx], new_conf[idx] = _greedy(logits, allowed)
                k += len(idx)
            ids[rows, cols], conf[rows, cols] = new_tok, new_conf
        rows_fwd += k
        history.append(ids.clone())
    return MaskPredictResult(ids, conf, torch.stack(history), free, rows_fwd)


@dataclass(frozen=True, eq=False)
class MaskPredict(Kernel):
    """Mask-predict as a kernel of :func:`~mlmprob.sampling.sample` (``method="mask-predict"``): one step is one
    whole :func:`mask_predict` fill of the free positions (``iterations`` rounds, ``strategy``), one epoch. Greedy:
    no randomness, every epoch the same fill. In its :class:`~mlmprob.sampling.kernels.DrawState`, ``log_prob`` is the
    sum of the free tokens' confidences and ``rounds`` = ``calls`` the iterations."""

    mlm: MaskedLM
    iterations: int = DEFAULT_ITERATIONS
    strategy: str = "mask_predict"
    score_all: bool = False
    State = DrawState

    def step(self, state: DrawState, generator: torch.Generator) -> tuple[DrawState, StepInfo]:
        r = mask_predict(
            self.mlm, state.ids, self.iterations, Resolved(state.free, WORDS_AND_MASKS), strategy=self.strategy
        )
        active = state.free.any(-1)
        n = active.long() * self.iterations
        state = dataclasses.replace(
            state,
            ids=r.ids,
            epoch=state.epoch + 1,
            log_prob=r.confidence.sum(-1),
            rounds=n,
            calls=n.clone(),
            forward_rows=state.forward_rows + r.forward_rows,
        )
        return state, StepInfo.drawn(active, r.forward_rows, True)
