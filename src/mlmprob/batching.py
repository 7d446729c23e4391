"""Masked copies, batched under a token budget.

Every scoring algorithm reduces to: for copy ``n``, take row ``rows[n]`` of ``input_ids``, put the
mask at ``cols[n]`` (and at any extra positions), and read the logits at ``cols[n]``. Copies are
sorted by the length of their row (bucketing), cut into sub-batches of at most ``batch_tokens``
tokens (trailing padding trimmed per sub-batch), and the output projection is computed only at
``cols`` (through the wrapper's ``logits_at`` when it has one).

Copies are sorted by length and a sub-batch only takes copies at least 4/5 as long as its longest
(unless that would leave fewer than ``MIN_ROWS`` rows), so padding wastes little compute. A
sub-batch of rows of width ``L`` holds at most ``rows_per_batch(L, batch_tokens)`` rows: at most
``batch_tokens`` tokens, and at most ``ATTENTION_BUDGET / L**2`` rows so that the attention scores of
long rows stay bounded (16 rows of 512 tokens). Larger sub-batches run faster on CPUs and GPUs alike;
lower ``batch_tokens`` when memory is short.
"""

from __future__ import annotations

from typing import Callable, Iterator

import torch

from .errors import NonFiniteError
from .models.protocol import NONFINITE_HINT, MaskedLM, gather_logits, lengths_of

DEFAULT_BATCH_TOKENS = 65536
ATTENTION_BUDGET = 16 * 512 * 512
MIN_ROWS = 8  # a sub-batch may mix lengths rather than fall below this many rows


def rows_per_batch(width: int, batch_tokens: int = DEFAULT_BATCH_TOKENS) -> int:
    """How many rows of ``width`` tokens one forward sub-batch holds (at least 1).

    >>> rows_per_batch(512), rows_per_batch(122), rows_per_batch(122, 8192), rows_per_batch(10_000, 100)
    (16, 281, 67, 1)
    """
    width = max(int(width), 1)
    return max(1, min(batch_tokens // width, ATTENTION_BUDGET // (width * width)))


def iter_masked_logits(
    mlm: MaskedLM,
    input_ids: torch.Tensor,
    rows: torch.Tensor,
    cols: torch.Tensor,
    *,
    extra_mask: torch.Tensor | None = None,
    batch_tokens: int = DEFAULT_BATCH_TOKENS,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(copy_index [n], logits [n, V])`` sub-batch by sub-batch, covering every copy once.

    ``extra_mask`` (bool ``[N, L]``) masks more positions in copy ``n`` besides ``cols[n]``.
    ``progress`` is called with the number of copies finished after each sub-batch. NaN or infinite
    logits raise ``NonFiniteError`` naming the affected rows of ``input_ids``.
    """
    if batch_tokens < 1:
        raise ValueError(f"batch_tokens must be positive, got {batch_tokens}")
    rows = torch.as_tensor(rows, dtype=torch.long)
    cols = torch.as_tensor(cols, dtype=torch.long)
    if rows.numel() == 0:
        return
    row_len = lengths_of(mlm, input_ids)
    copy_len = row_len[rows]
    order = torch.argsort(copy_len, descending=True, stable=True)
    start, N = 0, len(order)
    sorted_len = copy_len[order]
    while start < N:
        width = max(int(sorted_len[start]), 1)  # longest in this sub-batch: sorted descending
        n = min(N - start, rows_per_batch(width, batch_tokens))
        # bucketing: keep rows of similar length together (padding waste under ~20%)
        similar = int((sorted_len[start:start + n] * 5 >= width * 4).sum())
        n = max(similar, min(n, MIN_ROWS))
        idx = order[start:start + n]
        ids = input_ids[rows[idx], :width].clone()
        ar = torch.arange(n)
        ids[ar, cols[idx]] = mlm.mask_id
        if extra_mask is not None:
            ids[extra_mask[idx, :width]] = mlm.mask_id
        try:
            logits = gather_logits(mlm, ids, ar, cols[idx])
        except NonFiniteError as e:  # name the rows of ``input_ids``, not those of the sub-batch
            seqs = sorted(set(rows[idx[list(e.rows)]].tolist()))
            raise NonFiniteError(f"the model returned NaN or infinite logits for sequence(s) {seqs} "
                                 f"({NONFINITE_HINT})", rows=seqs) from None
        yield idx, logits
        start += n
        if progress is not None:
            progress(n)
