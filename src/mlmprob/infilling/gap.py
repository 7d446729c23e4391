"""The pieces every infilling algorithm shares: the result type and the validated gap (any set of positions of one
sequence; whatever they hold is overwritten), filled from ``candidate_ids``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..energies import check_input_ids
from ..errors import MLMProbError, PositionsError
from ..models.protocol import MaskedLM
from ..models.reader import reader_of
from .spec import check_beam_size, check_order  # noqa: F401 - where beam and baselines import them


@dataclass(frozen=True)
class InfillCandidate:
    """One fill of the gap: ``tokens`` (ids for the gap positions, in position order) and its
    ``score`` (log score under the method that found it; higher is better)."""

    tokens: tuple[int, ...]
    score: float


@dataclass(frozen=True)
class Gap:
    """A validated infilling problem.

    ``ids``: the sequence ``[L]`` (padding trimmed; gap positions hold the mask), ``positions``:
    sorted gap positions ``[k]``, ``candidates``: the ids a gap position may take ``[n]``."""

    ids: torch.Tensor
    positions: torch.Tensor
    candidates: torch.Tensor

    @property
    def k(self) -> int:
        return int(self.positions.numel())


def candidate_ids(mlm: MaskedLM) -> torch.Tensor:
    """Ids a gap may be filled with: ``proposal_ids`` if the model has them, else every output id
    except special tokens and the mask.

    >>> from mlmprob import ExactMLM
    >>> candidate_ids(ExactMLM(torch.zeros(3, 3))).tolist()
    [0, 1, 2]
    """
    mlm = reader_of(mlm)
    ids = mlm.proposal_ids
    if ids is None:
        banned = mlm.special_ids | {mlm.mask_id} | ({mlm.pad_id} - {None})
        ids = torch.tensor([i for i in range(mlm.vocab_size) if i not in banned], dtype=torch.long)
    ids = ids[(ids >= 0) & (ids < mlm.vocab_size)]
    if ids.numel() == 0:
        raise MLMProbError("the model has no output id that may fill a gap (empty proposal ids)")
    return ids


def prepare_gap(
    mlm: MaskedLM, input_ids, positions: Sequence[int] | torch.Tensor, candidates: torch.Tensor | None = None
) -> Gap:
    """Validate one sequence (``[L]`` or ``[1, L]``) and its gap positions.

    >>> from mlmprob import ExactMLM
    >>> g = prepare_gap(ExactMLM(torch.zeros(2, 2, 2)), [0, 1, 0], [2, 1])
    >>> g.ids.tolist(), g.positions.tolist(), g.k
    ([0, 2, 2], [1, 2], 2)
    """
    mlm = reader_of(mlm)
    try:
        ids = torch.as_tensor(input_ids)
    except (TypeError, ValueError, RuntimeError):
        ids = input_ids  # text, None, a ragged list: check_input_ids names it in one line
    else:  # one sequence [L] as a batch of one; float ids (and [], which torch makes float) are refused as given
        ids = ids[None] if ids.dim() == 1 and not ids.dtype.is_floating_point else ids
    ids = check_input_ids(mlm, ids)
    if ids.shape[0] != 1:
        raise MLMProbError(f"infilling takes one sequence, got a batch of {ids.shape[0]} (shape {tuple(ids.shape)})")
    L = int(mlm.lengths(ids)[0])
    ids = ids[0, :L].clone()
    try:
        pos = torch.as_tensor(positions)
    except (TypeError, ValueError, RuntimeError):  # None, a string: torch's own message names neither
        raise PositionsError(
            f"positions must be a list of integer token indices (0-based), got {type(positions).__name__} "
            f"{str(positions)[:40]!r}"
        ) from None
    if pos.dtype == torch.bool:
        if pos.dim() == 2 and pos.shape[0] == 1:
            pos = pos[0]
        pos = pos.nonzero(as_tuple=True)[0]
    if pos.numel() == 0:
        raise PositionsError("the gap is empty: give at least one position to fill")
    if pos.dim() != 1 or pos.dtype.is_floating_point:
        raise PositionsError(
            f"positions must be a list of integer indices, got shape {tuple(pos.shape)}, dtype {pos.dtype}"
        )
    pos = pos.long()
    if pos.min() < 0 or pos.max() >= L:
        bad = int(pos.max() if pos.max() >= L else pos.min())
        raise PositionsError(f"gap position {bad} is outside the sequence of {L} tokens")
    if pos.unique().numel() != pos.numel():
        raise PositionsError(f"gap positions repeat: {pos.tolist()}")
    pos = pos.sort().values
    special = mlm.special_at(ids)
    for p in pos.tolist():
        if special[p]:
            raise PositionsError(
                f"gap position {p} holds special token {int(ids[p])}; only sequence tokens can be filled"
            )
    ids[pos] = mlm.mask_id
    cand = candidate_ids(mlm) if candidates is None else torch.as_tensor(candidates, dtype=torch.long)
    return Gap(ids, pos, cand)
