"""The one switch of the device suite (``tests/gpu``, issue 40): which device the "device" side runs on.

``DEVICE`` is ``$MLMPROB_TEST_DEVICE`` (default ``cuda``). Every test of the suite carries :data:`MARKS`: marked
``cuda`` and skipped unless ``DEVICE`` is usable. On a machine with a GPU, ``pytest -m cuda tests/gpu`` compares
the GPU with the CPU; ``MLMPROB_TEST_DEVICE=cpu pytest -m cuda tests/gpu`` is the dry run: the "device" side is a
second CPU model (trivially equal values, but every code path and every assertion runs). A plain ``pytest``
(no GPU, no variable) skips them all.
"""

from __future__ import annotations

import functools
import os

import pytest
import torch

DEVICE = os.environ.get("MLMPROB_TEST_DEVICE", "cuda")

VH = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYAMDYWGQGTLVTVSS"


def usable(device: str = DEVICE) -> bool:
    """Whether ``device`` can run here: ``cpu`` always, ``cuda`` (``cuda:N``) with a CUDA GPU, ``mps`` with MPS.

    >>> usable("cpu"), usable("no-such-device")
    (True, False)
    """
    try:
        kind = torch.device(device).type
    except RuntimeError:
        return False
    if kind == "cpu":
        return True
    if kind == "cuda":
        return torch.cuda.is_available()
    return kind == "mps" and torch.backends.mps.is_available()


#: What every test of the suite carries (each module sets ``pytestmark = MARKS`` and imports ``host_threads``).
MARKS = [
    pytest.mark.cuda,
    pytest.mark.skipif(not usable(), reason=f"needs a usable {DEVICE!r} device (MLMPROB_TEST_DEVICE=cpu: CPU dry run)"),
    pytest.mark.usefixtures("host_threads"),
]


@pytest.fixture(scope="module")
def host_threads():
    """The CPU side of the comparisons on up to 8 intra-op threads while a real device is tested (the session runs
    on one, tests/conftest.py; a GPU machine's CPU is otherwise idle and the CPU half is most of the suite's time);
    one thread in the dry run, as the rest of the suite. A record's float32 values on a CPU do not depend on the
    thread count (``mlmprob.runtime.threads``). Restored afterwards."""
    n = torch.get_num_threads()
    if torch.device(DEVICE).type != "cpu":
        torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    yield
    torch.set_num_threads(n)


def worker_devices(n: int) -> str:
    """``--devices`` for ``n`` worker processes on ``DEVICE``'s first unit: ``cuda:0,cuda:0`` on a GPU, ``cpu,cpu`` in
    the dry run (a device string with an index is not a CPU's name everywhere).

    >>> worker_devices(2) in ("cuda:0,cuda:0", "cpu,cpu", "mps:0,mps:0")
    True
    """
    kind = torch.device(DEVICE).type
    return ",".join(["cpu" if kind == "cpu" else f"{kind}:0"] * n)


@functools.cache
def model_pair(name: str = "sapiens-vh"):
    """The CPU model and the ``DEVICE`` model (float32) of ``name``, loaded once per session."""
    from mlmprob import load_mlm

    return load_mlm(name, device="cpu"), load_mlm(name, device=DEVICE, dtype="float32")
