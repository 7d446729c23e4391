"""Float32 results that do not depend on the thread count (issue 28): matrix products whose every output
element is summed in an order fixed by the shapes alone.

Intel MKL's threaded ``sgemm`` splits small products between threads differently at 1, 2, 3 or 4 threads,
even in its reproducibility mode ``MKL_CBWR=AUTO,STRICT``: on this project's AMD EPYC (AVX2), 401 of 3039
``F.linear`` shapes gave different bits at 1-4 threads, every one with at most 32 rows
(docs/results/precision/threads_repro.md). Every other operation of the forward passes scanned there
(attention, layer norms, GELU, embeddings, log-softmax) gave the same bits at 1-4 threads. So:

- :func:`sequential_blas` (a context manager and decorator) makes MKL single-threaded in the calling
  thread while it is active (MKL's thread-local setting; torch's own kernels keep their threads). A
  single-threaded MKL routine has no thread count to depend on. :class:`mlmprob.models.hf.HFMaskedLM`
  runs every forward inside it (:func:`invariant_method`), transformers' code and the LM heads included,
  on the CPU with torch's math attention kernel (its other kernel calls MKL from torch's own worker
  threads, out of reach of the thread-local setting, and gave thread-dependent bits).
- :func:`linear` gets the threads back for the products that dominate a forward: rows cut in blocks of
  :data:`ROWS` (fixed; the last one shorter), each block multiplied by single-threaded MKL, the blocks
  shared among ``torch.get_num_threads()`` worker threads. Which thread computes a block does not change
  its bits. The fused ESM-2/BERT/RoBERTa forward (:mod:`mlmprob.models.fused`) multiplies through it.

``$MLMPROB_THREAD_INVARIANT=0`` (:data:`mlmprob.defaults.THREAD_INVARIANT_ENV`) turns both off (read at
every call). Where torch has no MKL (some ARM builds), both do nothing and nothing is guaranteed.

>>> x, w = torch.randn(300, 16, generator=torch.Generator().manual_seed(0)), torch.randn(8, 16)
>>> torch.allclose(linear(x, w), x @ w.T, atol=1e-5)
True
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import lru_cache

import torch
import torch.nn.functional as F

from ..defaults import THREAD_INVARIANT_ENV

ROWS = 256
"""Rows per block of :func:`linear`: a multiple of 64, so every block starts as aligned as the first."""


def enabled() -> bool:
    """Whether thread-count invariance is on: unless ``$MLMPROB_THREAD_INVARIANT`` is ``0``."""
    return os.environ.get(THREAD_INVARIANT_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


@lru_cache(maxsize=1)
def _mkl_set_local():
    """MKL's ``MKL_Set_Num_Threads_Local`` in torch's own library (C interface: by value; returns the
    previous setting, 0 = the global one), or None where torch has no MKL."""
    if not torch.backends.mkl.is_available():
        return None
    libdir = os.path.join(os.path.dirname(torch.__file__), "lib")
    for path in [None] + sorted(glob.glob(os.path.join(libdir, "libtorch_cpu.*"))):
        try:
            fn = ctypes.CDLL(path).MKL_Set_Num_Threads_Local
        except (OSError, AttributeError):
            continue
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
        return fn
    return None


def available() -> bool:
    """Whether MKL's thread count can be set here (torch built with MKL, its symbols found)."""
    return _mkl_set_local() is not None


def _one_thread(set_local) -> int:
    # torch sets this thread's MKL count on its first parallel call (lazily); make it happen before ours
    torch.get_num_threads()
    return set_local(1)


@contextmanager
def sequential_blas():
    """MKL single-threaded in this thread while active (restored after; nests). Also a decorator."""
    set_local = _mkl_set_local() if enabled() else None
    if set_local is None:
        yield
        return
    old = _one_thread(set_local)
    try:
        yield
    finally:
        set_local(old)


def invariant_method(fn):
    """Decorator of a model's forward method: runs it under :func:`sequential_blas`, and, when the model
    (``self.device``) is on the CPU, with torch's math attention (``scaled_dot_product_attention``'s other
    CPU kernel calls MKL from torch's worker threads, where mlmprob cannot make MKL single-threaded; the
    math kernel multiplies in the calling thread)."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        cpu = torch.device(getattr(self, "device", "cpu")).type == "cpu"
        with sequential_blas(), _math_attention() if cpu and enabled() else nullcontext():
            return fn(self, *args, **kwargs)

    return wrapper


def _math_attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])


_POOL: dict = {}
_POOL_LOCK = threading.Lock()


def _worker_init() -> None:
    _one_thread(_mkl_set_local())


def _pool(n: int) -> ThreadPoolExecutor:
    """The shared pool of ``n`` worker threads (remade in a forked child and when ``n`` changes)."""
    with _POOL_LOCK:
        if _POOL.get("key") != (os.getpid(), n):
            if _POOL.get("key", (None,))[0] == os.getpid():
                _POOL["pool"].shutdown(wait=False)  # its threads end once idle
            _POOL.update(
                key=(os.getpid(), n),
                pool=ThreadPoolExecutor(n, thread_name_prefix="mlmprob-gemm", initializer=_worker_init),
            )
        return _POOL["pool"]


def _block(x, wt, out, start, stop, inference) -> None:
    _one_thread(_mkl_set_local())
    with torch.inference_mode(inference), torch.no_grad():
        torch.mm(x[start:stop], wt, out=out[start:stop])


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` whose bits do not depend on the thread count: rows in blocks of
    :data:`ROWS`, each multiplied by single-threaded MKL, blocks run on ``torch.get_num_threads()`` threads;
    the bias added after. Off (plain ``F.linear``) when :func:`enabled` is false, without MKL, for tensors
    not on the CPU or not float32/float64, and where gradients are recorded."""
    if (
        not enabled()
        or x.device.type != "cpu"
        or x.dtype not in (torch.float32, torch.float64)
        or weight.dtype != x.dtype
        or not available()
        or (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad))
    ):
        return F.linear(x, weight, bias)
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    wt = weight.t()
    out = x2.new_empty(x2.shape[0], weight.shape[0])
    m = x2.shape[0]
    threads = torch.get_num_threads()
    if m <= ROWS or threads == 1:
        with sequential_blas():
            for start in range(0, m, ROWS):
                torch.mm(x2[start : start + ROWS], wt, out=out[start : start + ROWS])
    else:
        inference = torch.is_inference_mode_enabled()
        pool = _pool(threads)
        jobs = [pool.submit(_block, x2, wt, out, s, min(s + ROWS, m), inference) for s in range(0, m, ROWS)]
        for job in jobs:
            job.result()
    if bias is not None:
        out.add_(bias)
    return out.view(*lead, weight.shape[0])
