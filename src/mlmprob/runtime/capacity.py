"""How many CPU worker processes this machine can hold: ``--workers N`` (and the CPU entries of ``--devices``) capped
by the usable cores, by the memory for one model per worker and by the work there is. One worker is estimated at
:data:`RUNTIME_BYTES` plus twice the model's weight files (:data:`UNKNOWN_WEIGHT_BYTES` when they are not local)."""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from pathlib import Path

GiB = 1 << 30
RUNTIME_BYTES = GiB // 2  # Python + torch + transformers in one worker process
UNKNOWN_WEIGHT_BYTES = GiB // 2  # a model whose weight files are not in a local folder
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def cap_workers(
    requested: int, *, cores: int, available: int | None = None, per_worker: int | None = None, units: int | None = None
) -> tuple[int, str | None]:
    """``requested`` workers capped by ``cores``, by ``available`` bytes of memory at ``per_worker`` bytes each (when
    both are known) and by ``units`` of work (when known), never below 1; with why (the tightest limit, or None)."""
    limits = [(max(1, cores), f"{cores} CPU core{'s' if cores != 1 else ''}")]
    if available is not None and per_worker:
        memory = f"{available / GiB:.1f} GiB of memory available, about {per_worker / GiB:.1f} GiB per worker"
        limits.append((max(1, available // per_worker), memory))
    if units is not None:
        limits.append((max(1, units), f"{units} unit{'s' if units != 1 else ''} of work"))
    n, why = min(limits, key=lambda lw: lw[0])
    return (n, why) if n < requested else (requested, None)


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the system has one)."""
    with suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes of memory available to new processes (``MemAvailable`` of ``/proc/meminfo``); None where unknown."""
    with suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def worker_bytes(model: str | None) -> int:
    """The estimated memory of one worker that loads ``model`` (see the module docstring)."""
    weights = UNKNOWN_WEIGHT_BYTES
    folder = Path(model).expanduser() if model else None
    if folder is not None and folder.is_dir():
        if sizes := [f.stat().st_size for f in folder.iterdir() if f.name.endswith(WEIGHT_SUFFIXES) and f.is_file()]:
            weights = sum(sizes)
    return RUNTIME_BYTES + 2 * weights


def capped_workers(requested: int, model: str | None = None, units: int | None = None) -> int:
    """``--workers requested`` capped for this machine (:func:`cap_workers`), with a one-line warning on stderr."""
    n, why = cap_workers(
        requested, cores=usable_cores(), available=available_memory(), per_worker=worker_bytes(model), units=units
    )
    if why:
        print(f"warning: --workers {requested} capped to {n} ({why})", file=sys.stderr)
    return n


def capped_devices(devices: list[str], model: str | None = None) -> list[str]:
    """``--devices`` with its CPU entries capped like ``--workers`` (:func:`cap_workers`: cores, and the memory
    the other devices' processes leave), the other devices kept, with a one-line warning on stderr."""
    cpu = [i for i, d in enumerate(devices) if d.strip().lower().split(":")[0] == "cpu"]  # cpu, cpu:N
    if len(cpu) < 2:
        return devices
    per_worker, available = worker_bytes(model), available_memory()
    if available is not None:
        available = max(0, available - (len(devices) - len(cpu)) * per_worker)
    n, why = cap_workers(len(cpu), cores=usable_cores(), available=available, per_worker=per_worker)
    if not why:
        return devices
    workers = f"{n} CPU worker{'s' if n != 1 else ''}"
    print(f"warning: --devices {','.join(devices)} capped to {workers} ({why})", file=sys.stderr)
    drop = set(cpu[n:])
    return [d for i, d in enumerate(devices) if i not in drop]
