"""Many devices on one machine: one process per device, fed from the stream, results in input order.

``map_ordered(init, work, items, devices)`` calls ``state = init(device)`` once in each worker process and
``work(state, item)`` per item, yielding the results in the order of ``items``, at most ``2 x len(devices)`` in
flight. ``init`` and ``work`` must be picklable. One device: everything in this process. Workers die with this
process (``PR_SET_PDEATHSIG`` on Linux, and a pipe only this process holds)."""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from itertools import chain, islice
from typing import Any, TypeVar

from ..errors import MLMProbError
from .provenance import compute_threads

T = TypeVar("T")
R = TypeVar("R")

MAX_WORKERS = 4096  # worker processes (or Ray actors) of one run; a local run is capped lower (runtime.capacity)
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def parse_devices(workers: int | None, devices: str | None) -> list[str]:
    """``--workers N`` (N CPU processes) or ``--devices cuda:0,cuda:1`` -> one device string per process."""
    if workers is not None and devices is not None:
        raise MLMProbError("give --workers or --devices, not both")
    if devices is not None:
        out = [d.strip() for d in devices.split(",") if d.strip()]
        if not out:
            raise MLMProbError("--devices is empty; give e.g. cuda:0,cuda:1")
        return out
    if workers is None:
        return ["auto"]
    if workers < 1:
        raise MLMProbError(f"--workers must be >= 1, got {workers}")
    if workers > MAX_WORKERS:
        raise MLMProbError(f"--workers must be at most {MAX_WORKERS:,} (one process each), got {workers}")
    return ["cpu"] * workers


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of ``size`` consecutive items (the last may be shorter)."""
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def _die_with_parent(parent: int, lifeline, pdeathsig: bool) -> None:
    """In a worker: end this process once ``parent`` is gone: ``PR_SET_PDEATHSIG`` (only when the parent's main thread
    started the worker: it fires when that thread ends), and a thread reading ``lifeline``, a pipe whose writing end
    only the parent holds."""
    if pdeathsig and sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):  # no prctl: the lifeline alone
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)

    def watch():
        with suppress(EOFError, OSError):
            lifeline.recv()
        os._exit(1)

    threading.Thread(target=watch, name="mlmprob-lifeline", daemon=True).start()


def _worker(init, work, device, threads, tasks, results, parent, lifeline, pdeathsig) -> None:
    _die_with_parent(parent, lifeline, pdeathsig)
    try:
        if threads:
            import torch

            torch.set_num_threads(threads)
        state = init(device)
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which raises it
        results.put((-1, "error", _describe(e)))
        return
    while (task := tasks.get()) is not None:
        seq, item = task
        try:
            results.put((seq, "ok", work(state, item)))
        except BaseException as e:  # noqa: BLE001
            results.put((seq, "error", _describe(e)))
            return


def _describe(e: BaseException) -> tuple[str, str]:
    return ("input", str(e)) if isinstance(e, MLMProbError) else ("bug", "".join(traceback.format_exception(e)).strip())


def _raise(value: tuple[str, str], who: str = "a worker"):
    kind, msg = value
    if kind == "input":
        raise MLMProbError(msg)
    raise RuntimeError(f"{who} failed:\n{msg}")


def map_ordered(
    init: Callable[[str], object],
    work: Callable[[object, T], R],
    items: Iterable[T],
    devices: list[str],
    *,
    threads_per_worker: int | None = None,
) -> Iterator[R]:
    """Yield ``work(state, item)`` for every item, in order, over one process per device (no more processes than
    items: fewer items than devices use the first devices only)."""
    if threads_per_worker is None:  # of the devices asked for, before the cap: recorded in computed_with
        threads_per_worker = compute_threads(devices)
    items, devices = _cap_devices(iter(items), devices)
    if not devices:
        return
    if len(devices) == 1:
        state = init(devices[0])
        for item in items:
            yield work(state, item)
        return
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    lifeline, keep = ctx.Pipe(duplex=False)  # only this process holds ``keep``: its death closes the pipe
    life = (os.getpid(), lifeline, threading.current_thread() is threading.main_thread())
    procs = [
        ctx.Process(target=_worker, args=(init, work, d, threads_per_worker, tasks, results, *life), daemon=True)
        for d in devices
    ]
    for p in procs:
        p.start()
    lifeline.close()
    it = enumerate(items)
    pending: dict[int, tuple[str, Any]] = {}  # seq -> (status, value): a result or a worker's error
    sent, nxt, exhausted = 0, 0, False
    try:
        while True:
            want = 0 if exhausted else nxt + 2 * len(procs) - sent  # at most 2 tasks per worker in flight
            batch = list(islice(it, want))
            exhausted, sent = exhausted or len(batch) < want, sent + len(batch)
            for task in batch:
                tasks.put(task)
            if nxt == sent and exhausted:
                return
            while nxt not in pending:
                try:
                    seq, status, value = results.get(timeout=1.0)
                except queue.Empty:
                    dead = [(d, p.exitcode) for d, p in zip(devices, procs, strict=True) if p.exitcode not in (None, 0)]
                    if dead:
                        d, code = dead[0]
                        raise MLMProbError(f"the worker on {d} died (exit code {code}); rerun with --resume") from None
                    continue
                if status == "error" and seq < 0:  # a worker could not start
                    _raise(value)
                pending[seq] = (status, value)
            status, value = pending.pop(nxt)
            if status == "error":  # raised in its turn: every earlier result has been yielded
                _raise(value)
            yield value
            nxt += 1
    finally:
        _stop(procs, tasks, results, keep)


def _cap_devices(items: Iterator[T], devices: list[str]) -> tuple[Iterator[T], list[str]]:
    """No more worker processes than items (the first items read ahead and put back), with a warning."""
    if len(devices) <= 1:
        return items, devices
    first = list(islice(items, len(devices)))
    if not first:
        return items, []
    if len(first) < len(devices):
        n = len(first)
        warning = f"{len(devices)} worker processes capped to {n} (only {n} chunk{'s' if n > 1 else ''} of work)"
        print(f"warning: {warning}", file=sys.stderr)
        devices = devices[: len(first)]
    return chain(first, items), devices


def _stop(procs: list, tasks, results, keep) -> None:
    """Ask every worker to stop, join them (terminating any still alive after 5 s), close the queues."""
    for _ in procs:
        with suppress(OSError, ValueError):
            tasks.put(None)
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.terminate()
    tasks.close()
    results.close()
    keep.close()
