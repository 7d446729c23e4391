"""The one primitive every algorithm needs: logits of a batch of (partly masked) sequences.

Algorithms in mlmprob accept any object with ``mask_id``, ``vocab_size`` and ``logits``. Wrappers
may offer optional extras; every one is read through the model contract, :class:`mlmprob.models.reader.Reader`
(the helper functions below delegate to it), so that algorithms never assume a particular wrapper class:

- ``logits_at(input_ids, rows, cols) -> [N, V]``: logits only at the read positions (a wrapper
  around a large-vocabulary model computes the output projection only there);
- ``pad_id``: the padding id (right padding); positions holding it are never scored;
- ``special_ids``: ids never scored or proposed by default ([CLS], [SEP], padding, ...);
- ``proposal_ids``: the output ids that may be proposed (e.g. only the 20 amino acids);
- ``max_length``: the longest ``input_ids`` row the model accepts, special tokens included.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from ..errors import NonFiniteError
from .reader import reader_of

NONFINITE_HINT = "float16 overflow? load the model in float32 or bfloat16"


@runtime_checkable
class MaskedLM(Protocol):
    """A masked language model: ``logits(input_ids[B, L]) -> [B, L, V]``."""

    mask_id: int
    vocab_size: int

    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:  # pragma: no cover - protocol
        ...


def gather_logits(mlm: MaskedLM, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Logits ``[N, V]`` at ``(rows[n], cols[n])`` of ``input_ids``.

    Uses the wrapper's ``logits_at`` when it has one (output projection only where it is read),
    else indexes the full ``logits``. Logits with NaN or +inf, or a row without one finite logit,
    raise ``NonFiniteError`` whose ``rows`` are the affected rows of ``input_ids`` (-inf alone is
    a zero probability and allowed).
    """
    fn = getattr(mlm, "logits_at", None)
    out = fn(input_ids, rows, cols) if fn is not None else mlm.logits(input_ids)[rows, cols]
    bad = nonfinite_rows(out)
    if bad.any():
        seqs = sorted(set(torch.as_tensor(rows)[bad].tolist()))
        raise NonFiniteError(
            f"the model returned NaN or infinite logits for row(s) {seqs} of its input ({NONFINITE_HINT})", rows=seqs
        )
    return out


def nonfinite_rows(logits: torch.Tensor) -> torch.Tensor:
    """Bool ``[N]``: rows of ``logits [N, V]`` holding NaN or +inf, or no finite value at all.

    >>> nonfinite_rows(torch.tensor([[0.0, float("-inf")], [float("nan"), 0.0], [float("inf"), 0.0]]))
    tensor([False,  True,  True])
    """
    if logits.numel() == 0:
        return torch.zeros(logits.shape[0], dtype=torch.bool)
    return (logits.isnan() | logits.isposinf()).any(-1) | ~logits.isfinite().any(-1)


def pad_id_of(mlm: MaskedLM) -> int | None:
    return reader_of(mlm).pad_id


def special_ids_of(mlm: MaskedLM) -> frozenset[int]:
    return reader_of(mlm).special_ids


def proposal_ids_of(mlm: MaskedLM) -> torch.Tensor | None:
    """Ids that may be proposed/filled, or None for the whole output vocabulary."""
    return reader_of(mlm).proposal_ids


def max_length_of(mlm: MaskedLM) -> int | None:
    return reader_of(mlm).max_length


def foreign_ids(mlm: MaskedLM, ids: torch.Tensor) -> torch.Tensor:
    """Bool like ``ids``: ids the model cannot read - outside ``0..vocab_size-1`` and neither its mask id nor
    its padding id (which may be a reserved id past the vocabulary: :func:`mlmprob.models.tokenizers.padding_id`).

    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.zeros(3, 3))
    >>> foreign_ids(m, torch.tensor([0, 2, 3, 4, -1])).tolist()
    [False, False, False, True, True]
    """
    return reader_of(mlm).foreign(ids)


def id_range(mlm: MaskedLM) -> str:
    """The readable ids, for messages: ``0..V-1`` (and the mask/padding ids when outside it).

    >>> from mlmprob import ExactMLM
    >>> id_range(ExactMLM(torch.zeros(3, 3)))
    '0..3'
    """
    allowed = {mlm.mask_id, pad_id_of(mlm)} - {None}
    hi = mlm.vocab_size - 1
    while hi + 1 in allowed:
        hi += 1
    return f"0..{hi}" + "".join(f", {i}" for i in sorted(i for i in allowed if i > hi))


def lengths_of(mlm: MaskedLM, input_ids: torch.Tensor) -> torch.Tensor:
    """Length of each row without right padding (``L`` for every row if the model has no pad id)."""
    return reader_of(mlm).lengths(input_ids)


def default_positions(mlm: MaskedLM, input_ids: torch.Tensor) -> torch.Tensor:
    """Bool ``[B, L]``: every position that holds neither a special id nor padding."""
    return reader_of(mlm).default_positions(input_ids)
