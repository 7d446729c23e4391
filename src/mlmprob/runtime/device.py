"""Device and dtype: the default, ``--dtype weights``, and the ones chosen by the hardware (``--device auto``,
``--dtype auto``).

- device ``auto``: CUDA if present, else Apple MPS, else the CPU.
- dtype ``weights`` (the default): the weights' own floating-point dtype; a half-precision checkpoint on a CPU
  computes in float32. :func:`resolve_dtype` gives None for it (:func:`mlmprob.models.precision.apply_precision`).
- dtype ``auto``: bfloat16 on CUDA GPUs that support it, else float16; float32 on MPS; on a CPU bfloat16 only with
  native bf16 units and a measured speed-up of ``BF16_MIN_SPEEDUP`` (measured once per machine, kept in
  ``~/.cache/mlmprob/cpu-dtype.json``; docs/results/precision). ``$MLMPROB_DTYPE`` overrides."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from contextlib import suppress
from functools import lru_cache
from pathlib import Path

import torch

from ..defaults import DEVICE_TYPES, DTYPE_ENV, FUSED_ENV
from ..defaults import DTYPE_WEIGHTS as WEIGHTS
from ..errors import ModelLoadError
from .safefs import cache_file, save_cache

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16}
DTYPES |= {"half": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float64": torch.float64}
DTYPES["int8"] = torch.int8  # linear layers quantized, see mlmprob.models.precision
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
BF16_MIN_SPEEDUP = 1.5


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU feature flags of this machine (Linux ``/proc/cpuinfo``; empty elsewhere)."""
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def int8_reduce_range(flags: frozenset[str] | None = None) -> bool:
    """Whether activations must be quantized to 7 bits: True unless the CPU has AVX512-VNNI (fbgemm's
    VNNI kernels accumulate ``u8 x s8`` products in int32; its AVX2 kernels add pairs of them in
    saturating int16, which 8-bit activations can overflow)."""
    return "avx512_vnni" not in (cpu_flags() if flags is None else flags)


def int8_float_layers(n_layers: int) -> int:
    """How many of an encoder's first layers an int8 model keeps in float32: one per twelve layers."""
    return n_layers // 12


def fused_default() -> bool:
    """Whether models get mlmprob's fused forward where one exists: yes unless ``$MLMPROB_FUSED`` is ``0``."""
    return os.environ.get(FUSED_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def cpu_has_native_bf16(flags: frozenset[str] | None = None) -> bool:
    """True when the CPU multiplies bf16 matrices natively (AMX or AVX512-BF16)."""
    return not (cpu_flags() if flags is None else flags).isdisjoint(BF16_CPU_FLAGS)


def _matmul_seconds(dtype: torch.dtype, n: int = 512, reps: int = 8) -> float:
    """Best time of one ``n x n x n`` matrix product in ``dtype`` on this CPU."""
    a = torch.randn(n, n, generator=torch.Generator().manual_seed(0)).to(dtype)
    best = float("inf")
    for _ in range(reps + 1):
        t = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t)
    return best


def machine_key() -> str:
    """What the stored bf16 measurement is valid for: the CPU, its flags, the thread count and the torch version; a
    digest (not Python's salted ``hash``), so every worker of a run reads the one measurement."""
    flags = hashlib.sha1(" ".join(sorted(cpu_flags())).encode()).hexdigest()[:16]
    return f"{platform.processor() or platform.machine()}|{flags}|{torch.get_num_threads()}|{torch.__version__}"


@lru_cache(maxsize=1)
def cpu_bf16_speedup() -> float:
    """float32 time / bfloat16 time of a matrix product on this CPU, measured once per :func:`machine_key`."""
    key, path = machine_key(), cache_file("cpu-dtype.json")
    with suppress(OSError, ValueError, KeyError, TypeError):
        stored = json.loads(path.read_text())
        if stored.get("key") == key:
            return float(stored["bf16_speedup"])
    speedup = _matmul_seconds(torch.float32) / _matmul_seconds(torch.bfloat16)
    save_cache(path, json.dumps({"key": key, "bf16_speedup": speedup}))
    return speedup


def cpu_prefers_bf16(flags: frozenset[str] | None = None, speedup: float | None = None) -> bool:
    """Whether ``auto`` picks bfloat16 on this CPU: native bf16 units and a measured speed-up."""
    return cpu_has_native_bf16(flags) and (cpu_bf16_speedup() if speedup is None else speedup) >= BF16_MIN_SPEEDUP


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_device(spec="auto") -> torch.device:
    """``auto`` -> cuda, else mps, else cpu; any other torch device string is checked and returned: one of
    :data:`mlmprob.defaults.DEVICE_TYPES`, present on this machine.

    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("meta")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    mlmprob.errors.ModelLoadError: device 'meta' is not supported: use auto or a device of type cpu, cuda, mps
    (e.g. cuda:1)
    """
    if spec is None or (isinstance(spec, str) and spec.lower() == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if _mps_available() else "cpu")
    try:
        dev = torch.device(spec)
    except (RuntimeError, TypeError) as e:
        raise ModelLoadError(f"unknown device {spec!r}: {e}") from None
    if dev.type not in DEVICE_TYPES:  # meta holds no values; xla, hpu, ...: never run or tested here
        raise ModelLoadError(
            f"device {spec!r} is not supported: use auto or a device of type {', '.join(DEVICE_TYPES)} (e.g. cuda:1)"
        )
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ModelLoadError(f"device {spec!r} asked for, but this torch build sees no CUDA GPU")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ModelLoadError(f"device {spec!r} asked for, but only {torch.cuda.device_count()} CUDA GPU(s) exist")
    if dev.type == "mps" and not _mps_available():
        raise ModelLoadError(f"device {spec!r} asked for, but MPS is not available here")
    return dev


def auto_dtype(device: torch.device, *, cpu_bf16: bool | None = None, cuda_bf16: bool | None = None) -> torch.dtype:
    """The dtype ``auto`` picks on ``device`` (the flags are read from the hardware unless given)."""
    if device.type == "cuda":
        return torch.bfloat16 if (torch.cuda.is_bf16_supported() if cuda_bf16 is None else cuda_bf16) else torch.float16
    if device.type == "cpu":
        return torch.bfloat16 if (cpu_prefers_bf16() if cpu_bf16 is None else cpu_bf16) else torch.float32
    return torch.float32


def resolve_dtype(spec, device: torch.device | str = "cpu") -> torch.dtype | None:
    """``None`` and ``weights`` keep the weights' own dtype (None: the model decides); ``auto`` is ``$MLMPROB_DTYPE``
    when that names a dtype, else :func:`auto_dtype`; else a name or a torch dtype.

    >>> resolve_dtype("bf16"), resolve_dtype(None), resolve_dtype("weights")
    (torch.bfloat16, None, None)
    >>> resolve_dtype("auto", "cpu") in (torch.float32, torch.bfloat16)
    True
    """
    if spec is None or isinstance(spec, torch.dtype):
        return spec
    name = str(spec).lower()
    if name == WEIGHTS:
        return None
    if name == "auto":
        pinned = os.environ.get(DTYPE_ENV, "").strip().lower()
        if pinned and pinned != "auto":
            return resolve_dtype(pinned, device)
        return auto_dtype(torch.device(device))
    if name not in DTYPES:
        raise ModelLoadError(f"unknown dtype {spec!r}; use {WEIGHTS}, auto or one of {', '.join(sorted(DTYPES))}")
    return DTYPES[name]


def describe(device: torch.device, dtype: torch.dtype) -> str:
    """``"cpu float32"``, ``"cuda:0 (NVIDIA H100) bfloat16"``: what ran, for the CLI's output."""
    name = str(device)
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        name = f"cuda:{idx} ({torch.cuda.get_device_name(idx)})"
    return f"{name} {str(dtype).replace('torch.', '')}"
