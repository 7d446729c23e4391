"""Beam search infilling with masked LMs (Calef et al.). A fill ``w`` of the gap ``g_1..g_k`` scores, standard:
``sum_j log q_{g_j}(w_j | context, filled so far, rest masked)``; HCB: ``sum_j [log q_{g_j}(w_j | input_j) -
log q_{g_j}(v | input_j)]``, ``input_j`` holding the pivot ``v`` (default: the mask, then no extra pass) at the
unfilled positions. For compatible conditionals HCB is ``log p(w | context) - log p(v..v | context)`` for any order."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from ..settings import check_int
from .corrections import Pivot, Standard
from .gap import InfillCandidate, check_beam_size, check_order, prepare_gap
from .search import Correction, run_search
from .spec import METHODS, InfillSpec


def score_meaning(method: str, pivot: str | None = None) -> str:
    """What a candidate's ``score`` is under ``method``, with its unit, for reports: the two methods' scores
    are different quantities (a standard score is a log-probability, <= 0; an HCB score is a log-ratio
    to the pivot, ``pivot`` naming it, default the mask token, and often > 0), so a report says which."""
    return _method(_MEANINGS, method)(pivot or "mask")


_MEANINGS = {  # method -> what its score is, given the pivot's name
    "standard": lambda p: "log-probability of the fill in nats (chain rule: sum of log q(fill token | context), <= 0)",
    "hcb": lambda p: (
        f"log-ratio in nats, not a probability (sum of log q(fill token) - log q({p}) per position; > 0: beats {p})"
    ),
}


def _method(table: dict, method: str):
    """``method``'s entry of ``table``, or one line naming the methods."""
    if method not in table:
        raise MLMProbError(f"unknown infilling method {method!r}; use one of {', '.join(METHODS)}")
    return table[method]


def resolve_pivot(mlm: MaskedLM, pivot: int | None) -> int:
    """The HCB pivot id: ``pivot`` or the mask, which must then be one of the model's outputs."""
    if pivot is None:
        if not 0 <= mlm.mask_id < mlm.vocab_size:
            raise MLMProbError(
                f"HCB's default pivot is the mask token, but this model's output vocabulary ({mlm.vocab_size} "
                f"entries) has no entry for mask id {mlm.mask_id}; pass pivot=<token id> (costs extra forward passes)"
            )
        return mlm.mask_id
    top = mlm.vocab_size - 1
    return check_int("pivot", pivot, 0, f"a token id in 0..{top} (an output of the model)", top)


def _standard(mlm: MaskedLM, pivot: int | None) -> Correction:
    if pivot is not None:
        raise MLMProbError("pivot is used only by method='hcb'")
    return Standard()


def _hcb(mlm: MaskedLM, pivot: int | None) -> Correction:
    return Pivot(resolve_pivot(mlm, pivot), mlm.mask_id)


_CORRECTIONS = {"standard": _standard, "hcb": _hcb}  # method -> its correction of the beam's scores


def make_correction(mlm: MaskedLM, method: str, pivot: int | None = None) -> Correction:
    return _method(_CORRECTIONS, method)(mlm, pivot)


def beam_search(
    mlm: MaskedLM,
    input_ids,
    positions: Sequence[int] | torch.Tensor,
    *,
    correction: Correction,
    order: str = "l2r",
    beam_size: int = 5,
) -> list[InfillCandidate]:
    """Beam search with any per-step correction (see ``corrections``: the ablations plug in here)."""
    gap = prepare_gap(mlm, input_ids, positions)
    return run_search(mlm, gap, width=check_beam_size(beam_size), order=check_order(order), correction=correction)


def infill(
    mlm: MaskedLM,
    input_ids,
    positions: Sequence[int] | torch.Tensor,
    spec: InfillSpec | None = None,
    **overrides,
) -> list[InfillCandidate]:
    """The ``beam_size`` best fills of ``positions`` in one sequence, best first.

    ``input_ids``: ``[L]`` or ``[1, L]`` (whatever the gap positions hold is ignored); the settings: ``spec``, an
    :class:`~mlmprob.infilling.spec.InfillSpec` (default ``InfillSpec()``: HCB, left to right, 5 fills), its fields
    overridden by keyword: ``method``: ``"hcb"`` or ``"standard"``; ``order``: ``"l2r"`` or ``"best"`` (best to
    worst); ``beam_size``; ``pivot``: HCB's pivot token, or its id (default: the mask token; another token costs
    extra passes in ``best`` order, and different passes from standard's in either order), read in the model's
    vocabulary. Fills use the model's ``proposal_ids`` when it has them. Each candidate's ``score`` is its log
    score under the method (:func:`score_meaning`: a log-probability for standard, a log-ratio to the pivot for HCB)."""
    spec = InfillSpec.of(spec, **overrides)
    correction = make_correction(mlm, spec.method, spec.pivot_id(mlm))
    return beam_search(mlm, input_ids, positions, correction=correction, order=spec.order, beam_size=spec.beam_size)
