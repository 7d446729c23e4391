"""The two kinds of model calls of the samplers: ``site_logits`` (one masked copy per selected position) and
``block_logits`` (one copy per row with its block masked).
"""

from __future__ import annotations

import torch

from ..batching import iter_masked_logits, read_logits
from ..models.protocol import MaskedLM


def site_logits(mlm: MaskedLM, ids: torch.Tensor, select: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Logits ``[B, L, V]`` of the single-site masked copies at ``select`` (bool ``[B, L]``), zero
    elsewhere, and the number of copies forwarded."""
    B, L = ids.shape
    out = torch.zeros(B, L, mlm.vocab_size)
    rows, cols = select.nonzero(as_tuple=True)
    one = torch.zeros(B, dtype=torch.long)  # the chains of one call are one record
    for idx, logits in iter_masked_logits(mlm, ids, rows, cols, records=one):
        out[rows[idx], cols[idx]] = logits.to(out.dtype)
    return out, int(rows.numel())


def block_logits(mlm: MaskedLM, ids: torch.Tensor, block: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Logits ``[n, V]`` at ``block.nonzero()`` (row-major order), each row of ``ids`` forwarded once
    with its whole block masked; and the number of rows forwarded."""
    if not block.any():
        return torch.zeros(0, mlm.vocab_size), 0
    r, c = block.nonzero(as_tuple=True)  # row-major: the order of the output
    # the chains of one call are one record (they share the call's generator anyway)
    logits = read_logits(mlm, ids.masked_fill(block, mlm.mask_id), r, c)
    return logits.to(torch.get_default_dtype()), int(block.any(-1).sum())
