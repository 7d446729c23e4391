"""The web app's Infill tab: ``infill_compare``, standard and HCB beam search (``mlmprob.infill``), each left
to right and best first, on one gap; a pure function over the public API, as in :mod:`mlmprob.app.compute`."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import MLMProbError
from ..positions import token_numbers
from ..settings import check_int
from .compute import LIMITS, Limits, Progress, decode, encode_one, positions_or_cdr, word_tokens


@dataclass(frozen=True)
class Fill:
    """One ranked fill: its text, log score under the method, and the whole sequence with it."""

    rank: int
    fill: str
    score: float
    sequence: str
    tokens: tuple[int, ...]


@dataclass(frozen=True)
class InfillRun:
    """The beam of one ``method`` (``standard`` / ``hcb``) in one ``order`` (``l2r`` / ``best``);
    ``native_rank`` is the native fill's rank in it (None: not in the beam, or not known)."""

    method: str
    order: str
    fills: tuple[Fill, ...]
    native_rank: int | None


@dataclass(frozen=True)
class InfillResult:
    """The gap (its ``token_indices``, 0-based, and its 1-based residue/word ``numbers``, as the position box takes
    them), the ``native`` fill when the gap was given as positions of a complete sequence, and the four beams."""

    token_indices: tuple[int, ...]
    native: str | None
    runs: tuple[InfillRun, ...]
    numbers: tuple[int, ...] = ()  # 1-based residue/word numbers of the gap (mlmprob.positions.token_numbers)


def _gap(mlm, text: str, positions: str, limits: Limits):
    """``(ids [L], token positions, native token ids or None, 1-based residue/word numbers)``."""
    from ..infilling.stream import count_gaps, expand_gaps, mask_text

    text = str(text or "").strip()
    if str(positions or "").strip():
        if count_gaps(text):
            raise MLMProbError("give the gap either as ____ in the text or as positions, not both")
        enc = encode_one(mlm, text, limits)
        pos = word_tokens(enc, positions_or_cdr(text, positions, "gap positions"), "gap positions")
        ids = enc.input_ids[0, : int(enc.lengths[0])]
        native = ids[pos].clone()
    else:
        enc = encode_one(mlm, expand_gaps(text, mask_text(mlm)), limits)
        ids = enc.input_ids[0, : int(enc.lengths[0])]
        pos = (ids == mlm.mask_id).nonzero()[:, 0].tolist()
        native = None
        if not pos:
            raise MLMProbError(
                "the sequence has no gap; write it as ____ (one _ per token), [MASK]x5, or give the gap's positions"
            )
    if len(pos) > limits.max_gap:
        raise MLMProbError(f"the gap has {len(pos)} tokens; the app fills at most {limits.max_gap}")
    of = token_numbers(enc.word_ids[0], enc.input_ids[0], mlm.mask_id)
    return ids, pos, native, tuple(sorted({of[t] for t in pos}))


def infill_compare(
    mlm,
    text: str,
    positions: str = "",
    *,
    beam_size: int | float = 5,
    limits: Limits = LIMITS,
    progress: Progress | None = None,
) -> InfillResult:
    """Standard and HCB beam search (``mlmprob.infill``), each left to right and best first, on
    one gap: marked in ``text`` (``____``, ``[MASK]x5``) or given as 1-based ``positions``
    (``"10-14"``) of a complete sequence, whose own residues are then the native fill."""
    from ..infilling.beam import infill
    from ..infilling.spec import InfillSpec

    if isinstance(beam_size, float) and beam_size.is_integer():
        beam_size = int(beam_size)
    beam_size = check_int("beam size", beam_size, 1, f"an integer in 1..{limits.max_beam}", limits.max_beam)
    ids, pos, native, numbers = _gap(mlm, text, positions, limits)
    runs = []
    plan = [InfillSpec(method=m, order=o, beam_size=beam_size) for m in ("standard", "hcb") for o in ("l2r", "best")]
    for n, spec in enumerate(plan):
        cands = infill(mlm, ids, pos, spec)
        fills, native_rank = [], None
        for rank, c in enumerate(cands, start=1):
            full = ids.clone()
            full[pos] = torch.tensor(c.tokens)
            fills.append(Fill(rank, decode(mlm, c.tokens), float(c.score), decode(mlm, full), tuple(c.tokens)))
            if native is not None and native_rank is None and list(c.tokens) == native.tolist():
                native_rank = rank
        runs.append(InfillRun(spec.method, spec.order, tuple(fills), native_rank))
        if progress:
            progress(n + 1, len(plan))
    return InfillResult(tuple(pos), None if native is None else decode(mlm, native), tuple(runs), numbers)
