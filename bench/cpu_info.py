"""What the benchmarks' CPU offers, read at run time (the project's machines have changed between runs:
an AVX2-only EPYC and an AVX-512 / AVX512-BF16 / VNNI one), for the "Machine:" line of a report."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

FEATURES = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx512_fp16", "amx_bf16", "amx_int8")


def cpu_flags(cpuinfo: str | None = None) -> tuple[str, set[str]]:
    """``(model name with family / model, set of flags)`` from ``/proc/cpuinfo`` (or the text given).

    >>> name, flags = cpu_flags("model name\\t: AMD EPYC\\ncpu family\\t: 25\\nmodel\\t\\t: 17\\nflags\\t\\t: fpu avx2")
    >>> name, sorted(flags)
    ('AMD EPYC (family 25, model 17)', ['avx2', 'fpu'])
    """
    if cpuinfo is None:
        p = Path("/proc/cpuinfo")
        cpuinfo = p.read_text() if p.is_file() else ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        k, _, v = line.partition(":")
        fields.setdefault(k.strip(), v.strip())
    name = fields.get("model name", platform.processor() or platform.machine())
    if "cpu family" in fields:
        name += f" (family {fields['cpu family']}, model {fields.get('model', '?')})"
    return name, set(fields.get("flags", "").split())


def describe(cpuinfo: str | None = None) -> str:
    """One line: CPU, its vector / matrix features among ``FEATURES``, cores, torch and its kernels' level.

    >>> "avx512_bf16: no" in describe("model name\\t: X\\nflags\\t\\t: avx2")
    True
    """
    name, flags = cpu_flags(cpuinfo)
    feats = ", ".join(f"{f}: {'yes' if f in flags else 'no'}" for f in FEATURES)
    return (
        f"{platform.machine()} {name}, {os.cpu_count()} cores; {feats}; torch {torch.__version__} "
        f"(kernel level {torch.backends.cpu.get_cpu_capability()})"
    )


def emit(text: str, out: str | None) -> int:
    """A benchmark's last step: print its report, write it to ``out`` when given; the exit status (0).

    >>> emit("ok", None)
    ok
    0
    """
    print(text)
    if out:
        Path(out).write_text(text)
    return 0
