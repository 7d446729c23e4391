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

import sys
import weakref
from typing import Callable, Iterator

import torch

from .defaults import BATCH_TOKENS
from .errors import MLMProbError, NonFiniteError
from .models.protocol import NONFINITE_HINT, MaskedLM, gather_logits, lengths_of, nonfinite_rows

DEFAULT_BATCH_TOKENS = BATCH_TOKENS  # chosen in mlmprob.defaults
ATTENTION_BUDGET = 16 * 512 * 512
MIN_ROWS = 8  # a sub-batch may mix lengths rather than fall below this many rows


def rows_per_batch(width: int, batch_tokens: int = DEFAULT_BATCH_TOKENS) -> int:
    """How many rows of ``width`` tokens one forward sub-batch holds (at least 1).

    The attention cap grows with budgets above the default (GPUs), never shrinks below it.

    >>> rows_per_batch(512), rows_per_batch(122), rows_per_batch(122, 8192), rows_per_batch(10_000, 100)
    (16, 281, 67, 1)
    >>> rows_per_batch(512, 8 * DEFAULT_BATCH_TOKENS)
    128
    """
    width = max(int(width), 1)
    batch_tokens = DEFAULT_BATCH_TOKENS if batch_tokens is None else batch_tokens
    attention = max(ATTENTION_BUDGET, ATTENTION_BUDGET * (batch_tokens // DEFAULT_BATCH_TOKENS))
    return max(1, min(batch_tokens // width, attention // (width * width)))


def auto_batch_tokens(mlm: MaskedLM, requested: int | None = None) -> int:
    """``requested`` when given; else :data:`DEFAULT_BATCH_TOKENS` on CPUs, and on a CUDA GPU a budget
    sized from its free memory (a third of it, at the model's activation bytes per token).

    >>> auto_batch_tokens(object()), auto_batch_tokens(object(), 1024)
    (65536, 1024)
    """
    if requested is not None:
        if requested < 1:
            raise MLMProbError(f"batch_tokens must be positive, got {requested}")
        return int(requested)
    device = getattr(mlm, "device", None)
    if device is None or torch.device(device).type != "cuda":
        return DEFAULT_BATCH_TOKENS
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    cfg = getattr(getattr(mlm, "model", None), "config", None)
    hidden = getattr(cfg, "hidden_size", 1024)
    inter = getattr(cfg, "intermediate_size", 4 * hidden)
    heads = getattr(cfg, "num_attention_heads", 16)
    width = min(getattr(mlm, "max_length", None) or 512, 1024)
    itemsize = torch.empty((), dtype=getattr(mlm, "dtype", torch.float32)).element_size()
    per_token = itemsize * (inter + 8 * hidden + 2 * heads * width)
    budget = int(free // 3 // per_token)
    return max(1024, min(budget, 64 * DEFAULT_BATCH_TOKENS))


def is_out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` is a device (or host) out-of-memory error."""
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(e, oom):
        return True
    msg = str(e).lower()
    return isinstance(e, RuntimeError) and ("out of memory" in msg or "can't allocate memory" in msg)


_oom_caps: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _row_cap(mlm) -> int | None:
    try:
        return _oom_caps.get(mlm)
    except TypeError:  # not weak-referenceable
        return None


def _lower_cap(mlm, n: int, width: int) -> int:
    new = max(1, n // 2)
    try:
        first = mlm not in _oom_caps
        _oom_caps[mlm] = new
    except TypeError:
        first = False
    if first:
        print(f"warning: out of memory at {n} rows of {width} tokens; halving sub-batches and going on "
              "(pass a lower --batch-tokens to avoid the retries)", file=sys.stderr)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return new


def _plan(copy_len: torch.Tensor, batch_tokens: int) -> tuple[torch.Tensor, list[tuple[int, int, int]]]:
    """Sort copies by length and cut them into ``(start, n, width)`` sub-batches (on the host)."""
    order = torch.argsort(copy_len, descending=True, stable=True)
    sorted_len = copy_len[order].tolist()
    plan, start, N = [], 0, len(order)
    while start < N:
        width = max(int(sorted_len[start]), 1)  # longest in this sub-batch: sorted descending
        n = min(N - start, rows_per_batch(width, batch_tokens))
        # bucketing: keep rows of similar length together (padding waste under ~20%)
        similar = sum(1 for x in sorted_len[start:start + n] if x * 5 >= width * 4)
        n = max(similar, min(n, MIN_ROWS))
        plan.append((start, n, width))
        start += n
    return order, plan


def _raise_nonfinite(rows) -> None:
    seqs = sorted(set(int(r) for r in rows))
    raise NonFiniteError(f"the model returned NaN or infinite logits for sequence(s) {seqs} ({NONFINITE_HINT})",
                         rows=seqs) from None


def iter_masked_logits(
    mlm: MaskedLM,
    input_ids: torch.Tensor,
    rows: torch.Tensor,
    cols: torch.Tensor,
    *,
    extra_mask: torch.Tensor | None = None,
    batch_tokens: int | None = DEFAULT_BATCH_TOKENS,
    progress: Callable[[int], None] | None = None,
    on_device: bool = False,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(copy_index [n], logits [n, V])`` sub-batch by sub-batch, covering every copy once.

    ``extra_mask`` (bool ``[N, L]``) masks more positions in copy ``n`` besides ``cols[n]``.
    ``progress`` is called with the number of copies finished after each sub-batch.

    With ``on_device`` the masked copies are built on the model's device, the loop makes no host
    synchronisation, and both tensors are yielded there (logits as float32); otherwise they are on
    the CPU. A sub-batch that runs out of memory is halved and retried (reported once); the smaller
    size is kept for the model's later calls. NaN or infinite logits raise ``NonFiniteError`` naming
    the affected rows of ``input_ids``.
    """
    batch_tokens = auto_batch_tokens(mlm, batch_tokens)
    rows = torch.as_tensor(rows, dtype=torch.long)
    cols = torch.as_tensor(cols, dtype=torch.long)
    if rows.numel() == 0:
        return
    row_len = lengths_of(mlm, input_ids.cpu())
    order, plan = _plan(row_len[rows.cpu()], batch_tokens)
    dev = torch.device(getattr(mlm, "device", "cpu")) if on_device else torch.device("cpu")
    ids_all, order, rows, cols = input_ids.to(dev), order.to(dev), rows.to(dev), cols.to(dev)
    extra = None if extra_mask is None else extra_mask.to(dev)
    # looked up on the class: a wrapper that overrides logits_at but forwards other attributes (__getattr__)
    # must not have its inner model's hot path used behind its back
    fast = mlm.device_logits_at if on_device and hasattr(type(mlm), "device_logits_at") else None
    bad = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=dev) if fast is not None else None
    for start, n_planned, width in plan:
        done = 0
        while done < n_planned:
            cap = _row_cap(mlm)
            n = n_planned - done if cap is None else min(cap, n_planned - done)
            idx = order[start + done:start + done + n]
            ids = ids_all[rows[idx], :width].clone()
            ar = torch.arange(n, device=dev)
            ids[ar, cols[idx]] = mlm.mask_id
            if extra is not None:
                ids[extra[idx, :width]] = mlm.mask_id
            try:
                if fast is not None:  # checked on the device, read once at the end: no sync in the loop
                    logits = fast(ids, ar, cols[idx])
                    bad[rows[idx]] |= nonfinite_rows(logits)
                else:
                    logits = gather_logits(mlm, ids, ar, cols[idx])
            except NonFiniteError as e:  # name the rows of ``input_ids``, not those of the sub-batch
                _raise_nonfinite(rows[idx[list(e.rows)]].tolist())
            except Exception as e:  # noqa: BLE001 - only out-of-memory is handled, the rest re-raised
                if not is_out_of_memory(e):
                    raise
                if n == 1:
                    raise MLMProbError(f"out of memory even for one copy of {width} tokens on {dev}; "
                                       "use a smaller model, a lower --dtype or another device") from None
                _lower_cap(mlm, n, width)
                continue
            yield idx, (logits.float() if on_device else logits.cpu())
            done += n
            if progress is not None:
                progress(n)
    if bad is not None and bool(bad.any()):
        _raise_nonfinite(bad.nonzero()[:, 0].tolist())
