"""The one primitive every algorithm needs: logits of a batch of (partly masked) sequences. Algorithms accept any
object with ``mask_id``, ``vocab_size`` and ``logits``; optional extras (``logits_at``, ``pad_id``, ...) are read
only through the model contract, :class:`mlmprob.models.reader.Reader`, which lists them."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from ..errors import NonFiniteError

NONFINITE_HINT = "float16 overflow? load the model in float32 or bfloat16"


@runtime_checkable
class MaskedLM(Protocol):
    """A masked language model: ``logits(input_ids[B, L]) -> [B, L, V]``."""

    mask_id: int
    vocab_size: int

    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:  # pragma: no cover - protocol
        ...


def gather_logits(mlm: MaskedLM, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Logits ``[N, V]`` at ``(rows[n], cols[n])`` of ``input_ids``: the model's ``logits_at`` when it has one (the
    output projection only where it is read), else its full ``logits`` indexed. Logits with NaN or +inf, or a row
    without one finite logit, raise ``NonFiniteError`` naming the rows of ``input_ids`` (-inf alone is allowed)."""
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
    """Bool ``[N]``: rows of ``logits [N, V]`` holding NaN or +inf, or no finite value at all."""
    if logits.numel() == 0:
        return torch.zeros(logits.shape[0], dtype=torch.bool)
    return (logits.isnan() | logits.isposinf()).any(-1) | ~logits.isfinite().any(-1)
