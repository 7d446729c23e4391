"""Float32 results that do not depend on the thread count: every matrix product of a forward summed in an order the
thread count does not change (MKL's threaded ``sgemm`` splits small products differently at 1-4 threads even in its
strict mode: docs/results/precision/threads_repro.md, threads_fast.md).

- :func:`sequential_blas`: MKL single-threaded in the calling thread while active. :func:`invariant_method` runs a
  model's forward in it, with ``F.linear`` and ``F.scaled_dot_product_attention`` sent to :func:`linear` and
  :func:`attention` on the CPU; the fused forward calls those itself (:func:`direct_products`).
- :func:`linear`: more than :data:`ROWS` rows, one threaded MKL call in MKL's strict mode (:func:`strict_cnr`), else
  blocks of :data:`ROWS` rows; at most :data:`ROWS` rows, blocks of output columns (:func:`column_width`). Each block
  by single-threaded MKL, the blocks on ``torch.get_num_threads()`` threads, the same at every thread count.
- :func:`attention`: torch's fused kernel in MKL's strict mode, else :func:`blocked_attention`.

``$MLMPROB_THREAD_INVARIANT=0`` turns all of it off (read at every call); without MKL it does nothing."""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext, suppress
from functools import lru_cache

import torch
import torch.nn.functional as F

from ..defaults import THREAD_INVARIANT_ENV

ROWS = 256
"""Rows per block of :func:`linear` (a multiple of 64, so every block starts as aligned as the first), and
the most rows a product has that :func:`linear` keeps off MKL's threads in the strict mode."""

COLUMN_WORK = 1 << 23
"""Fewest multiply-adds per block of output columns of :func:`linear` (0.13 ms at one thread here)."""

COLUMN_BLOCKS = 8
"""Most blocks of output columns of one product of :func:`linear`."""

_ACTIVE = threading.local()  # .mode: the routing mode of this thread's innermost invariant_method, or None
_POOL: dict = {}  # the threads of run_blocks: "key" (pid, size), "pool"
_POOL_LOCK = threading.Lock()


def column_width(rows: int, inner: int, cols: int) -> int:
    """Output columns per block of a product ``[rows, inner] x [inner, cols]`` (``rows`` at most :data:`ROWS`) in
    :func:`linear`: a multiple of 64, at least :data:`COLUMN_WORK` multiply-adds per block, at most
    :data:`COLUMN_BLOCKS` blocks; fixed by the shape, never by the thread count."""
    width = max(-(-COLUMN_WORK // max(1, rows * inner)), -(-cols // COLUMN_BLOCKS))
    return -(-width // 64) * 64


def enabled() -> bool:
    """Whether thread-count invariance is on: unless ``$MLMPROB_THREAD_INVARIANT`` is ``0``."""
    return os.environ.get(THREAD_INVARIANT_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _lib_function(globs: Sequence[str], symbol: str, restype, first: Sequence[str | None] = ()):
    """``symbol`` (one int argument) of the first library of ``first`` (None: this process) or of torch's own
    folder matching ``globs`` that has it; None where none has it."""
    libdir = os.path.join(os.path.dirname(torch.__file__), "lib")
    for path in [*first, *sorted(p for g in globs for p in glob.glob(os.path.join(libdir, g)))]:
        with suppress(OSError, AttributeError):  # not loadable, or without the symbol: the next
            fn = getattr(ctypes.CDLL(path), symbol)
            fn.restype, fn.argtypes = restype, [ctypes.c_int]
            return fn
    return None


@lru_cache(maxsize=1)
def _mkl_set_local():
    """MKL's ``MKL_Set_Num_Threads_Local`` in torch's own library (C interface: by value; returns the
    previous setting, 0 = the global one), or None where torch has no MKL."""
    if torch.backends.mkl.is_available():
        return _lib_function(["libtorch_cpu.*"], "MKL_Set_Num_Threads_Local", ctypes.c_int, first=[None])
    return None


def available() -> bool:
    """Whether MKL's thread count can be set here (torch built with MKL, its symbols found)."""
    return _mkl_set_local() is not None


@contextmanager
def sequential_blas():
    """MKL single-threaded in this thread while active (restored after; nests). Also a decorator."""
    with _mkl_threads(1) if enabled() and available() else nullcontext():
        yield


def invariant_method(fn):
    """Decorator of a model's forward: runs it under :func:`sequential_blas` and, on the CPU (``self.device``), with
    ``F.linear`` and ``F.scaled_dot_product_attention`` sent to :func:`linear` and :func:`attention`, except for an int8
    model (``self.dtype``: fbgemm's products are not thread-invariant anyway)."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        cpu = torch.device(getattr(self, "device", "cpu")).type == "cpu"
        exact = getattr(self, "dtype", None) != torch.int8  # int8 (fbgemm): no invariance to keep, torch's attention
        mode = _Invariant() if cpu and exact and enabled() else None
        outer, _ACTIVE.mode = getattr(_ACTIVE, "mode", None), mode
        try:
            with sequential_blas(), mode or nullcontext():
                return fn(self, *args, **kwargs)
        finally:
            _ACTIVE.mode = outer

    return wrapper


@contextmanager
def direct_products():
    """The routing of :func:`invariant_method` suspended in this thread while active, for code that calls
    :func:`linear` and :func:`attention` itself (the fused forward): 2.4 us less per torch call here."""
    mode = getattr(_ACTIVE, "mode", None)
    if mode is not None:
        mode.__exit__(None, None, None)
    try:
        yield
    finally:
        mode is not None and mode.__enter__()


@lru_cache(maxsize=1)
def _omp_set_local():
    """``omp_set_num_threads`` of torch's OpenMP runtime (sets the calling thread's team size), or None."""
    return _lib_function(["libgomp*.so*", "libiomp*.so*"], "omp_set_num_threads", None)


def _worker_init() -> None:
    """A pool thread: MKL and torch's own kernels single-threaded in it (the pool is the parallelism)."""
    torch.get_num_threads()  # torch sets this thread's MKL count on its first parallel call: before ours
    _mkl_set_local()(1)
    omp = _omp_set_local()
    omp is not None and omp(1)


def _pool(n: int) -> ThreadPoolExecutor:
    """The shared pool of ``n`` worker threads (remade in a forked child and when ``n`` changes)."""
    with _POOL_LOCK:
        if _POOL.get("key") != (os.getpid(), n):
            if _POOL.get("key", (None,))[0] == os.getpid():
                _POOL["pool"].shutdown(wait=False)  # its threads end once idle
            pool = ThreadPoolExecutor(n, thread_name_prefix="mlmprob-gemm", initializer=_worker_init)
            _POOL.update(key=(os.getpid(), n), pool=pool)
        return _POOL["pool"]


def run_blocks(fn, starts: Sequence) -> None:
    """``fn(task)`` for every task (a block's key) on ``torch.get_num_threads()`` threads, this one and the pool's,
    each taking the next task, with single-threaded MKL and torch kernels (in this thread alone at one thread or one
    task); ``fn`` writes its own part of a preallocated output."""
    threads = torch.get_num_threads()
    if threads == 1 or len(starts) == 1:
        with sequential_blas():
            for s in starts:
                fn(s)
        return
    inference, grad = torch.is_inference_mode_enabled(), torch.is_grad_enabled()
    tasks: queue.SimpleQueue = queue.SimpleQueue()
    for s in starts:
        tasks.put(s)

    def drain():
        with torch.inference_mode(inference), torch.set_grad_enabled(grad):
            while True:
                try:
                    s = tasks.get_nowait()
                except queue.Empty:
                    return
                fn(s)

    jobs = [_pool(threads - 1).submit(drain) for _ in range(min(threads, len(starts)) - 1)]
    omp = _omp_set_local()  # this thread's share with torch's own kernels serial too, as in the pool's
    try:
        with sequential_blas():
            omp is not None and omp(1)
            drain()
    finally:
        omp is not None and omp(threads)
        for j in jobs:
            j.result()


@lru_cache(maxsize=1)
def strict_cnr() -> bool:
    """Whether MKL runs in its strict reproducibility mode (``$MKL_CBWR`` with ``STRICT`` when this process
    first asked; ``import mlmprob`` sets ``AUTO,STRICT`` before torch's first MKL call unless told otherwise)."""
    return "STRICT" in os.environ.get("MKL_CBWR", "").upper()


@contextmanager
def _mkl_threads(n: int):
    set_local = _mkl_set_local()
    torch.get_num_threads()
    old = set_local(n)
    try:
        yield
    finally:
        set_local(old)


def _exact(*tensors: torch.Tensor) -> bool:
    """Whether the products are made thread-invariant: on, with MKL, CPU tensors of one dtype, float32 or float64,
    no gradients recorded through them."""
    dtype = tensors[0].dtype
    return (
        enabled()
        and available()
        and dtype in (torch.float32, torch.float64)
        and all(t.device.type == "cpu" and t.dtype == dtype for t in tensors)
        and not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors))
    )


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` whose bits do not depend on the thread count; plain ``F.linear`` where
    :func:`_exact` says no (off, without MKL, off the CPU, outside float32/float64, gradients recorded)."""
    if not _exact(x, weight):
        return F.linear(x, weight, bias)
    m = math.prod(x.shape[:-1])
    if m > ROWS and strict_cnr():
        with _mkl_threads(torch.get_num_threads()):
            return F.linear(x, weight, bias)
    lead, n = x.shape[:-1], weight.shape[0]
    x2, wt = x.reshape(m, x.shape[-1]).contiguous(), weight.t()
    out = x2.new_empty(x2.shape[0], n)
    if m > ROWS:
        run_blocks(lambda s: torch.mm(x2[s : s + ROWS], wt, out=out[s : s + ROWS]), list(range(0, m, ROWS)))
        if bias is not None:
            out.add_(bias)
    else:
        w = column_width(m, x2.shape[1], n)

        def block(c):
            torch.mm(x2, wt[:, c : c + w], out=out[:, c : c + w])
            if bias is not None:
                out[:, c : c + w].add_(bias[c : c + w])

        run_blocks(block, list(range(0, n, w)) or [0])
    return out.view(*lead, n)


ATTENTION_CHUNK = 1 << 18
"""Most attention scores ``[rows, Lq, L]`` of one head in one block of :func:`attention` (1 MB in float32)."""


def attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """``F.scaled_dot_product_attention`` whose bits do not depend on the thread count, for ``[B, heads, Lq, d]``
    inputs: torch's fused kernel in MKL's strict mode (:func:`_fused_attention`), else :func:`blocked_attention`.
    ``attn_mask``: boolean (True attends) or added; a fully masked row gives zeros. What it does not cover (dropout,
    causal, grouped queries, gradients) goes to torch's math kernel with single-threaded MKL; torch's own when
    :func:`enabled` is false."""
    q, k, v = query, key, value
    shaped = q.dim() == k.dim() == v.dim() == 4 and q.shape[:2] == k.shape[:2] == v.shape[:2]
    plain = not (dropout_p or is_causal or enable_gqa) and (attn_mask is None or attn_mask.dim() <= 4)
    if not (shaped and plain and _exact(q, k, v)):
        if not enabled():
            return F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale=scale)
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sequential_blas(), sdpa_kernel([SDPBackend.MATH]):
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa
            )
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    mask = attn_mask
    if mask is not None and mask.dim() < 4:
        mask = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))
    out = _fused_attention(q, k, v, mask, scale) if strict_cnr() else None
    softmax = torch.softmax if mask is None else torch.ops.aten._safe_softmax
    return out if out is not None else blocked_attention(q, k, v, mask, scale, softmax)


def _fused_attention(q, k, v, mask, scale) -> torch.Tensor | None:
    """torch's fused CPU attention kernel, or None where it declines the inputs: the same bits at 1-4 threads in MKL's
    strict mode (docs/results/precision/threads_repro.md), called as ``F.scaled_dot_product_attention`` calls it (a
    boolean mask made additive), touching no process-wide setting."""
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill_(~mask, float("-inf"))
    elif mask is not None:
        mask = mask.to(q.dtype)
    with suppress(RuntimeError):
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, False, attn_mask=mask, scale=scale
        )[0]
    return None


def blocked_attention(q, k, v, mask, scale, softmax=torch.softmax) -> torch.Tensor:
    """The work of :func:`attention` (``mask`` 4-d or None): one :func:`run_blocks` task per head and block of
    :data:`ATTENTION_CHUNK` scores; the output is a view of a ``[B, Lq, heads, dv]`` tensor."""
    b, heads, lq, _ = q.shape
    step = max(1, ATTENTION_CHUNK // max(1, lq * k.shape[2]))
    out = q.new_empty(b, lq, heads, v.shape[3])

    def block(task):
        i, j = task
        s = torch.bmm(q[i : i + step, j], k[i : i + step, j].transpose(1, 2)).mul_(scale)
        if mask is not None:
            m = mask if mask.shape[0] == 1 else mask[i : i + step]
            m = m[:, 0 if m.shape[1] == 1 else j]
            s = s.masked_fill_(~m, float("-inf")) if m.dtype == torch.bool else s.add_(m)
        out[i : i + step, :, j] = torch.bmm(softmax(s, -1), v[i : i + step, j])

    run_blocks(block, [(i, j) for i in range(0, max(b, 1), step) for j in range(heads)])
    return out.transpose(1, 2)


class _Invariant(torch.overrides.TorchFunctionMode):
    """Routes ``F.linear`` and ``F.scaled_dot_product_attention`` to :func:`linear` and :func:`attention`."""

    def __torch_function__(self, func, types, call_args=(), kwargs=None):  # torch passes all four by position
        kwargs = kwargs or {}
        if func is F.linear:
            return _linear_call(*call_args, **kwargs)
        if func is F.scaled_dot_product_attention:
            return attention(*call_args, **kwargs)
        return func(*call_args, **kwargs)


def _linear_call(input, weight, bias=None):  # noqa: A002 - F.linear's own argument names
    return linear(input, weight, bias)
