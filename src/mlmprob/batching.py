"""Reads of a model for the algorithms, through the one forward primitive (:mod:`mlmprob.models.forward`): masked
copies of input rows (:func:`iter_masked_logits`) or given rows (:func:`read_logits` / :func:`iter_read_logits`).
A record's copies are forwarded in sub-batches of their own, so its scores never depend on the records beside it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch

from .models.forward import (  # noqa: F401 - re-exported: the names algorithms import
    ATTENTION_BUDGET,
    DEFAULT_BATCH_TOKENS,
    GivenRows,
    MaskedCopies,
    auto_batch_tokens,
    forward_all,
    is_out_of_memory,
    iter_forward,
    rows_per_batch,
)
from .models.protocol import MaskedLM


def iter_masked_logits(
    mlm: MaskedLM,
    input_ids: torch.Tensor,
    rows: torch.Tensor,
    cols: torch.Tensor,
    *,
    extra_mask: torch.Tensor | None = None,
    progress: Callable[[int], None] | None = None,
    on_device: bool = False,
    records: torch.Tensor | None = None,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(copy_index [n], logits [n, V])`` sub-batch by sub-batch, covering every copy once: copy ``n`` is row
    ``rows[n]`` of ``input_ids`` with ``cols[n]`` (and ``extra_mask[n]``, bool ``[N, L]``) masked, read at ``cols[n]``.
    A row's copies are forwarded only with each other, in order; ``records`` (``[B]``) lets rows of one record share
    sub-batches (the chains of one sampling call). ``progress``, ``on_device``, out-of-memory halving, NaN or infinite
    logits (``NonFiniteError`` naming the rows of ``input_ids``): as :func:`mlmprob.models.forward.iter_forward`."""
    src = MaskedCopies(mlm, input_ids, rows, cols, extra_mask, records)
    yield from iter_forward(mlm, src, torch.arange(len(src.rows)), src.cols, progress=progress, on_device=on_device)


def iter_read_logits(
    mlm: MaskedLM,
    ids: torch.Tensor,
    read_row: torch.Tensor,
    read_col: torch.Tensor,
    *,
    groups: torch.Tensor | None = None,
    progress: Callable[[int], None] | None = None,
    on_device: bool = False,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(read_index [n], logits [n, V])``: read ``q`` is position ``read_col[q]`` of row ``read_row[q]`` of
    ``ids`` (forwarded as they are). ``groups`` (``[R]``): each row's record (default: one); rows of different
    records never share a sub-batch."""
    source = GivenRows(mlm, ids, groups)
    yield from iter_forward(mlm, source, read_row, read_col, progress=progress, on_device=on_device)


def read_logits(
    mlm: MaskedLM,
    ids: torch.Tensor,
    read_row: torch.Tensor,
    read_col: torch.Tensor,
    *,
    groups: torch.Tensor | None = None,
    progress: Callable[[int], None] | None = None,
) -> torch.Tensor:
    """All reads of :func:`iter_read_logits` at once: logits ``[N, V]`` on the CPU, in read order."""
    return forward_all(mlm, GivenRows(mlm, ids, groups), read_row, read_col, progress=progress)
