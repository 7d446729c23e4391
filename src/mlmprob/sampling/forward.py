"""The two kinds of model calls the samplers make.

- ``site_logits``: one masked copy per selected position (the single-site conditionals that give
  ``E_local``/``E_raw`` and the single-site proposals);
- ``block_logits``: one copy per row with a whole block masked, read at the block.
"""

from __future__ import annotations

import torch

from ..batching import DEFAULT_BATCH_TOKENS, iter_masked_logits, rows_per_batch
from ..models.protocol import MaskedLM, gather_logits, lengths_of


def site_logits(mlm: MaskedLM, ids: torch.Tensor, select: torch.Tensor,
                batch_tokens: int = DEFAULT_BATCH_TOKENS) -> tuple[torch.Tensor, int]:
    """Logits ``[B, L, V]`` of the single-site masked copies at ``select`` (bool ``[B, L]``), zero
    elsewhere, and the number of copies forwarded."""
    B, L = ids.shape
    out = torch.zeros(B, L, mlm.vocab_size)
    rows, cols = select.nonzero(as_tuple=True)
    for idx, logits in iter_masked_logits(mlm, ids, rows, cols, batch_tokens=batch_tokens):
        out[rows[idx], cols[idx]] = logits.to(out.dtype)
    return out, int(rows.numel())


def block_logits(mlm: MaskedLM, ids: torch.Tensor, block: torch.Tensor,
                 batch_tokens: int = DEFAULT_BATCH_TOKENS) -> tuple[torch.Tensor, int]:
    """Logits ``[n, V]`` at ``block.nonzero()`` (row-major order), each row of ``ids`` forwarded once
    with its whole block masked; and the number of rows forwarded."""
    rows_with = block.any(-1).nonzero(as_tuple=True)[0]
    n = int(block.sum())
    out = torch.zeros(n, mlm.vocab_size)
    if n == 0:
        return out, 0
    masked = ids.clone()
    masked[block] = mlm.mask_id
    lens = lengths_of(mlm, ids)
    start, filled = 0, 0
    while start < len(rows_with):
        width = max(int(lens[rows_with[start:]].max()), 1)
        m = rows_per_batch(width, batch_tokens)
        chunk = rows_with[start:start + m]
        width = max(int(lens[chunk].max()), 1)
        r, c = block[chunk].nonzero(as_tuple=True)
        logits = gather_logits(mlm, masked[chunk, :width], r, c)
        out[filled:filled + len(r)] = logits.to(out.dtype)
        filled += len(r)
        start += len(chunk)
    assert filled == n
    return out, int(len(rows_with))
