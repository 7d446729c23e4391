"""The one forward primitive: rows of token ids in, the model's logits at requested ``(row, position)`` reads out.

:func:`iter_forward` owns the plan (sub-batches of at most ``rows_per_batch(width, batch_tokens)`` rows, trailing
padding trimmed), batch independence (a sub-batch never mixes *groups*, the records rows are computed for, so a
record's logits do not depend on its neighbours, shard, worker or chunk), the device hot path (no host
synchronisation), out-of-memory halving (reported once, kept for later calls; the last bits of float32 logits may
then change), non-finite detection naming the caller's rows, and progress. Rows come from :class:`GivenRows` (as
they are) or :class:`MaskedCopies` (copies with positions masked, built per sub-batch)."""

from __future__ import annotations

import copy
import sys
import weakref
from collections.abc import Callable, Iterator

import torch

from ..defaults import BATCH_TOKENS
from ..errors import MLMProbError, NonFiniteError
from .protocol import NONFINITE_HINT, MaskedLM, gather_logits, nonfinite_rows
from .reader import reader_of

DEFAULT_BATCH_TOKENS = BATCH_TOKENS  # the CPU budget, chosen in mlmprob.defaults
BUDGET_UNIT = 65536  # the unit GPU budgets are measured in (attention cap, largest auto budget)
ATTENTION_BUDGET = 16 * 512 * 512


def rows_per_batch(width: int, batch_tokens: int | None = None) -> int:
    """How many rows of ``width`` tokens one forward sub-batch holds (at least 1); the attention cap (16 rows of 512
    tokens per :data:`BUDGET_UNIT` tokens) grows with budgets above that unit (GPUs), never shrinks below it."""
    width = max(int(width), 1)
    batch_tokens = DEFAULT_BATCH_TOKENS if batch_tokens is None else batch_tokens
    attention = max(ATTENTION_BUDGET, ATTENTION_BUDGET * (batch_tokens // BUDGET_UNIT))
    return max(1, min(batch_tokens // width, attention // (width * width)))


def auto_batch_tokens(mlm: MaskedLM, requested: int | None = None) -> int:
    """``requested``, else the reader's own budget, else :data:`DEFAULT_BATCH_TOKENS` on CPUs and on a CUDA GPU
    :func:`gpu_batch_tokens` of its total memory."""
    if requested is not None:
        if requested < 1:
            raise MLMProbError(f"batch_tokens must be positive, got {requested}")
        return int(requested)
    r = reader_of(mlm)
    if r.batch_tokens is not None:
        return r.batch_tokens
    if r.device.type != "cuda":
        return DEFAULT_BATCH_TOKENS
    _, total = torch.cuda.mem_get_info(r.device)
    cfg = getattr(r.model, "config", None)
    hidden = getattr(cfg, "hidden_size", 1024)
    inter = getattr(cfg, "intermediate_size", 4 * hidden)
    heads = getattr(cfg, "num_attention_heads", 16)
    width = min(r.max_length or 512, 1024)
    itemsize = torch.empty((), dtype=r.dtype).element_size()
    params = getattr(r.model, "parameters", None)
    weights = sum(p.numel() * p.element_size() for p in params()) if callable(params) else 0
    return gpu_batch_tokens(total, weights, itemsize * (inter + 8 * hidden + 2 * heads * width))


def gpu_batch_tokens(total: int, weights: int, per_token: int) -> int:
    """The token budget on a GPU of ``total`` bytes holding ``weights`` bytes of weights, at ``per_token``
    activation bytes per token: a third of what the weights leave, rounded down to a power of two, between
    1024 and ``64 x BUDGET_UNIT``. From the total memory, not the free memory, which moves with other processes:
    a record longer than one sub-batch is cut where the budget says, so its float32 bits would move too."""
    budget = max(1, (total - weights) // 3 // max(1, per_token))
    return max(1024, min(1 << (int(budget).bit_length() - 1), 64 * BUDGET_UNIT))


def is_out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` is a device (or host) out-of-memory error."""
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(e, oom):
        return True
    msg = str(e).lower()
    return isinstance(e, RuntimeError) and ("out of memory" in msg or "can't allocate memory" in msg)


_oom_caps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _row_cap(mlm) -> int | None:
    try:
        return _oom_caps.get(mlm)
    except TypeError:  # not weak-referenceable
        return None


def _lower_cap(mlm, n: int, width: int) -> None:
    try:
        first = mlm not in _oom_caps
        _oom_caps[mlm] = max(1, n // 2)
    except TypeError:
        first = False
    if first:
        print(
            f"warning: out of memory at {n} rows of {width} tokens; halving sub-batches and going on "
            "(pass a lower --batch-tokens to avoid the retries)",
            file=sys.stderr,
        )
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# -- row sources: ``lengths``, ``groups`` and ``names`` are ``[R]`` CPU long tensors: each row's length without right
# padding, its group (rows of different groups never share a sub-batch) and the row that a non-finite error names;
# ``build(idx, width)``: the rows ``idx`` as ids ``[n, width]``
class GivenRows:
    """Token rows forwarded as they are. ``groups`` default: all rows one group (one record)."""

    def __init__(
        self, mlm: MaskedLM, ids: torch.Tensor, groups: torch.Tensor | None = None, names: torch.Tensor | None = None
    ):
        self.ids = torch.as_tensor(ids, dtype=torch.long)
        R = self.ids.shape[0]
        self.lengths = reader_of(mlm).lengths(self.ids.cpu())
        self.groups = torch.zeros(R, dtype=torch.long) if groups is None else torch.as_tensor(groups).long().cpu()
        self.names = torch.arange(R) if names is None else torch.as_tensor(names).long().cpu()

    def to(self, device: torch.device) -> GivenRows:
        out = copy.copy(self)
        out.ids = self.ids.to(device)
        return out

    def build(self, idx: torch.Tensor, width: int) -> torch.Tensor:
        return self.ids[idx, :width]


class MaskedCopies:
    """Copy ``n`` = row ``rows[n]`` of ``input_ids`` with ``cols[n]`` (and ``extra_mask[n]``, bool ``[N, L]``)
    masked; grouped by the record of its row (``records[row]``; default: each row its own), named by its row."""

    def __init__(
        self,
        mlm: MaskedLM,
        input_ids: torch.Tensor,
        rows: torch.Tensor,
        cols: torch.Tensor,
        extra_mask: torch.Tensor | None = None,
        records: torch.Tensor | None = None,
    ):
        self.mask_id = mlm.mask_id
        self.input_ids = torch.as_tensor(input_ids, dtype=torch.long)
        self.rows = torch.as_tensor(rows, dtype=torch.long)
        self.cols = torch.as_tensor(cols, dtype=torch.long)
        self.extra = extra_mask
        self.names = rows_cpu = self.rows.cpu()
        self.lengths = reader_of(mlm).lengths(self.input_ids.cpu())[rows_cpu]
        self.groups = rows_cpu if records is None else torch.as_tensor(records).long().cpu()[rows_cpu]

    def to(self, device: torch.device) -> MaskedCopies:
        out = copy.copy(self)
        out.input_ids, out.rows, out.cols = self.input_ids.to(device), self.rows.to(device), self.cols.to(device)
        out.extra = None if self.extra is None else self.extra.to(device)
        return out

    def build(self, idx: torch.Tensor, width: int) -> torch.Tensor:
        ids = self.input_ids[self.rows[idx], :width].clone()
        ids[torch.arange(len(idx), device=ids.device), self.cols[idx]] = self.mask_id
        if self.extra is not None:
            ids[self.extra[idx, :width]] = self.mask_id
        return ids


RowSource = GivenRows | MaskedCopies


# -- the plan --------------------------------------------------------------------------------------------
def plan_groups(
    lengths: torch.Tensor, groups: torch.Tensor, needed: torch.Tensor, batch_tokens: int
) -> tuple[torch.Tensor, list[tuple[int, int, int]]]:
    """``(order, plan)``: the needed rows in forward order (by group, then row index) and the ``(start, n, width)``
    sub-batches over ``order``; a sub-batch never crosses a group."""
    order = needed[torch.argsort(groups[needed], stable=True)]  # needed is sorted: ties keep the row order
    lens, plan, start = lengths[order].tolist(), [], 0
    for count in torch.unique_consecutive(groups[order], return_counts=True)[1].tolist():  # group by group
        end = start + count
        width = max(max(lens[start:end]), 1)
        per = rows_per_batch(width, batch_tokens)
        plan += [(s, min(per, end - s), width) for s in range(start, end, per)]
        start = end
    return order, plan


def _raise_nonfinite(names) -> None:
    seqs = sorted(set(int(r) for r in names))
    raise NonFiniteError(
        f"the model returned NaN or infinite logits for sequence(s) {seqs} ({NONFINITE_HINT})", rows=seqs
    ) from None


def iter_forward(
    mlm: MaskedLM,
    source: RowSource,
    read_row: torch.Tensor,
    read_col: torch.Tensor,
    *,
    progress: Callable[[int], None] | None = None,
    on_device: bool = False,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(read_index [n], logits [n, V])`` sub-batch by sub-batch, covering every read once: read ``q`` is
    position ``read_col[q]`` of row ``read_row[q]`` of ``source`` (rows without a read are not forwarded).
    ``progress`` gets the rows finished after each sub-batch. With ``on_device`` the rows are built on the model's
    device, the loop makes no host synchronisation, and both tensors are yielded there (logits as float32)."""
    if progress is not None and not callable(progress):
        raise MLMProbError(f"progress must be a function of the rows finished, or None; got {progress!r:.40}")
    reader = reader_of(mlm)
    batch_tokens = auto_batch_tokens(reader)  # the reader's budget (models/reader.py), else the device's
    read_row = torch.as_tensor(read_row, dtype=torch.long).cpu()
    read_col = torch.as_tensor(read_col, dtype=torch.long).cpu()
    if read_row.numel() == 0:
        return
    groups = source.groups
    if not reader.pads_safely:  # models/probe.py: rows of one length
        groups = groups * (int(source.lengths.max()) + 1) + source.lengths
    order, plan = plan_groups(source.lengths, groups, torch.unique(read_row), batch_tokens)
    pos = torch.full((len(source.lengths),), -1, dtype=torch.long)
    pos[order] = torch.arange(len(order))
    read_order = torch.argsort(pos[read_row], stable=True)  # reads grouped by their row's forward slot
    read_pos = pos[read_row][read_order]
    dev = reader.device if on_device else torch.device("cpu")
    src = source.to(dev)
    order_d, read_order_d, read_pos_d = order.to(dev), read_order.to(dev), read_pos.to(dev)
    read_col_d, names = read_col.to(dev), source.names.to(dev)
    bounds = torch.searchsorted(read_pos, torch.arange(len(order) + 1)).tolist()
    # the model's own hot path (the reader knows whether it has one; a test may replace it on the reader)
    fast = reader.device_logits_at if on_device and reader.has_fast_path else None
    bad = torch.zeros(int(source.names.max()) + 1, dtype=torch.int32, device=dev) if fast is not None else None
    for start, n_planned, width in plan:
        done = 0
        while done < n_planned:
            cap = _row_cap(reader.wrapped)
            n = n_planned - done if cap is None else min(cap, n_planned - done)
            lo, hi = start + done, start + done + n
            idx = order_d[lo:hi]
            q = read_order_d[bounds[lo] : bounds[hi]]
            local = read_pos_d[bounds[lo] : bounds[hi]] - lo
            ids = src.build(idx, width)
            try:
                if fast is not None:  # checked on the device, read once at the end: no sync in the loop
                    assert bad is not None  # made with fast
                    logits = fast(ids, local, read_col_d[q])
                    bad.index_add_(0, names[idx[local]], nonfinite_rows(logits).to(torch.int32))
                else:
                    logits = gather_logits(reader, ids, local, read_col_d[q])
            except NonFiniteError as e:  # name the caller's rows, not those of the sub-batch
                _raise_nonfinite(names[idx[list(e.rows)]].tolist())
            except Exception as e:  # noqa: BLE001 - only out-of-memory is handled, the rest re-raised
                if not is_out_of_memory(e):
                    raise
                if n == 1:
                    raise MLMProbError(
                        f"out of memory even for one copy of {width} tokens on {dev}; "
                        "use a smaller model, a lower --dtype or another device"
                    ) from None
                _lower_cap(reader.wrapped, n, width)
                continue
            yield q, (logits.float() if on_device else logits.cpu())
            done += n
            if progress is not None:
                progress(n)
    if bad is not None and bool((bad > 0).any()):
        _raise_nonfinite(bad.nonzero()[:, 0].tolist())


def forward_all(
    mlm: MaskedLM,
    source: RowSource,
    read_row: torch.Tensor,
    read_col: torch.Tensor,
    *,
    progress: Callable[[int], None] | None = None,
) -> torch.Tensor:
    """All reads of :func:`iter_forward` at once: logits ``[N, V]`` on the CPU, in read order."""
    out = None
    for q, logits in iter_forward(mlm, source, read_row, read_col, progress=progress):
        if out is None:
            out = torch.empty(len(read_row), logits.shape[-1], dtype=logits.dtype)
        out[q] = logits
    return torch.empty(0, mlm.vocab_size) if out is None else out
