"""Sequences longer than a model's window, read through windows centred on each read position.

``WindowedMLM(mlm, window)`` passes a row of at most ``window`` tokens unchanged. For a longer row, the logits at
``t`` are the model's at ``t`` on ``row[s : s + window]``, ``s = min(max(t - window // 2, 0), length - window)``,
taken as it is (the row's BOS/EOS only where the window touches an end; masks outside the window unseen). Reads in
the same window share one forward row. Other attributes are passed through; ``max_length`` is None."""

from __future__ import annotations

import torch

from ..errors import MLMProbError
from .forward import GivenRows, forward_all
from .protocol import MaskedLM, gather_logits
from .reader import reader_of


def window_starts(lengths: torch.Tensor, cols: torch.Tensor, window: int) -> torch.Tensor:
    """First token of the window read for position ``cols[n]`` of a row of ``lengths[n]`` tokens."""
    return torch.minimum((cols - window // 2).clamp(min=0), (lengths - window).clamp(min=0))


def _rows(input_ids) -> torch.Tensor:
    ids = torch.as_tensor(input_ids, dtype=torch.long)
    if ids.dim() != 2:
        raise MLMProbError(f"input_ids must have shape [B, L], got {tuple(ids.shape)}")
    return ids


class WindowedMLM:
    """A masked LM that reads long rows through windows of ``window`` tokens (see the module doc)."""

    def __init__(self, mlm: MaskedLM, window: int, *, batch_tokens: int | None = None):
        if int(window) < 1:
            raise MLMProbError(f"the window must hold at least one token, got {window}")
        self.inner = mlm
        self.window = int(window)
        self.batch_tokens = None if batch_tokens is None else int(batch_tokens)  # None: for the device
        self.mask_id = mlm.mask_id
        self.vocab_size = mlm.vocab_size
        self.max_length = None

    def __getattr__(self, name):
        if name == "inner":  # not yet set (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def device_logits_at(self, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """The inner model's hot path when the rows fit the window, else the windowed reads, on the inputs' device."""
        if input_ids.shape[1] <= self.window and hasattr(self.inner, "device_logits_at"):
            return self.inner.device_logits_at(input_ids, rows, cols)
        return self.logits_at(input_ids.cpu(), rows.cpu(), cols.cpu()).to(input_ids.device)

    def logits_at(self, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        ids = _rows(input_ids)
        rows, cols = torch.as_tensor(rows, dtype=torch.long), torch.as_tensor(cols, dtype=torch.long)
        W, L = self.window, ids.shape[1]
        if L <= W:
            return gather_logits(self.inner, ids, rows, cols)
        inner = reader_of(self.inner, self.batch_tokens)
        lengths = inner.lengths(ids)
        start = window_starts(lengths[rows], cols, W)
        # one forward row per distinct (row, start); reads in the same window share it
        key, inverse = torch.unique(rows * (L + 1) + start, return_inverse=True)
        w_rows, w_start = key // (L + 1), key % (L + 1)
        width = int(torch.minimum(lengths[w_rows], torch.full_like(w_rows, W)).max()) if len(key) else 1
        wins = ids[w_rows[:, None], (w_start[:, None] + torch.arange(width)).clamp(max=L - 1)]
        # the windows of one call are one record: the caller's plan already keeps records apart
        return forward_all(inner, GivenRows(inner, wins), inverse, cols - start)

    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``[B, L, V]``; zeros at right-padding positions of rows longer than the window."""
        ids = _rows(input_ids)
        B, L = ids.shape
        if L <= self.window:
            return self.inner.logits(ids)
        rows, cols = (torch.arange(L)[None, :] < reader_of(self.inner).lengths(ids)[:, None]).nonzero(as_tuple=True)
        part = self.logits_at(ids, rows, cols)
        out = torch.zeros(B, L, part.shape[-1], dtype=part.dtype)
        out[rows, cols] = part
        return out

    def __repr__(self) -> str:
        return f"WindowedMLM({self.inner!r}, window={self.window})"
