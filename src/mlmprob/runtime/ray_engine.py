"""``--engine ray``: the chunks of a streamed run through Ray Data ``map_batches`` on a pool of model actors, one per
device (docs/scale.md), with the contract of :func:`.pool.map_ordered` (:func:`map_ray`).

A dead actor is replaced and its chunks rerun; a chunk reported twice is kept once. The stream is read in windows of
``window`` chunks (one Ray dataset each). Without an address (or ``RAY_ADDRESS``) a local Ray with ``max(2, actors)``
CPUs is started and shut down; Ray's logs and bars are silenced while it runs."""

from __future__ import annotations

import logging
import os
import pickle
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import TypeVar

from ..errors import MLMProbError
from .pool import _describe, _raise, chunked

T = TypeVar("T")
R = TypeVar("R")

WINDOW = 4096  # chunks per Ray dataset


@dataclass(frozen=True)
class ActorPlan:
    """How many model actors, on which kind of device, and what each one reserves."""

    actors: int
    device: str  # what ``load`` gets inside the actor: "cpu" or "cuda" (Ray exposes one GPU as cuda:0)
    num_gpus: int  # per actor
    num_cpus: int = 1  # per actor


def plan_actors(devices: Sequence[str], cluster_cpus: float, cluster_gpus: float) -> ActorPlan:
    """One actor per requested device, capped by what the cluster has; ``auto`` means every GPU of the
    cluster, or one CPU actor per device when it has none."""
    kinds = {"cuda" if d.startswith("cuda") else d for d in devices}
    if kinds == {"auto"}:
        if cluster_gpus >= 1:
            return ActorPlan(int(cluster_gpus), "cuda", 1)
        kinds = {"cpu"}
    if kinds == {"cuda"}:
        if cluster_gpus < 1:
            raise MLMProbError(f"--engine ray: {len(devices)} GPU actor(s) asked for, but the Ray cluster has no GPU")
        return ActorPlan(min(len(devices), int(cluster_gpus)), "cuda", 1)
    if kinds == {"cpu"}:
        return ActorPlan(max(1, min(len(devices), int(cluster_cpus))), "cpu", 0)
    raise MLMProbError(f"--engine ray runs on cpu or cuda devices, not {', '.join(sorted(kinds))}")


class _ModelActor:
    """A Ray Data actor: loads the model once, then runs chunks. A batch has one row per chunk, ``i`` (its place in the
    window) and ``chunk`` (pickled); it returns ``i`` and ``out``, the pickled ``("ok", result)``, or
    ``("input"|"bug", message)`` when ``load``/``run`` failed."""

    def __init__(self, load: Callable, run: Callable, device: str):
        self.run, self.error = run, None
        try:
            self.state = load(device)
        except Exception as e:  # noqa: BLE001 - reported with the first chunk, as one clean error
            self.error = _describe(e)

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        out = []
        for blob in batch["chunk"]:
            try:  # a load error is this chunk's answer too
                out.append(pickle.dumps(self.error or ("ok", self.run(self.state, pickle.loads(blob)))))
            except Exception as e:  # noqa: BLE001 - sent to the driver, which raises it
                out.append(pickle.dumps(_describe(e)))
        return {"i": np.asarray(batch["i"]), "out": np.array(out, dtype=object)}


@contextmanager
def _quiet_ray():
    """Ray Data's loggers at ERROR, its progress bars off and the driver's echo of raylet messages
    ("task ... will be retried", which Ray prints on stdout) dropped; restored afterwards."""
    import ray.data

    try:
        from ray._private import worker as ray_worker
    except ImportError:  # a Ray without this private module: its echo is left alone
        ray_worker = None

    ctx = ray.data.DataContext.get_current()
    quiet = [(ctx, k, False) for k in ("enable_progress_bars", "print_on_execution_start", "enable_auto_log_stats")]
    quiet = [q for q in [*quiet, (ray_worker, "print_to_stdstream", lambda *a, **k: None)] if hasattr(q[0], q[1])]
    saved = [(obj, k, getattr(obj, k)) for obj, k, _ in quiet]
    loggers = {name: logging.getLogger(name).level for name in ("ray", "ray.data")}
    try:
        for name in loggers:
            logging.getLogger(name).setLevel(logging.ERROR)
        for obj, k, v in quiet:
            setattr(obj, k, v)
        yield
    finally:
        for name, level in loggers.items():
            logging.getLogger(name).setLevel(level)
        for obj, k, v in saved:
            setattr(obj, k, v)


def _connect(ray, address: str | None, actors_wanted: int) -> bool:
    """Connect to ``address`` (or ``RAY_ADDRESS``), or start a local instance; True if we started one."""
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    kw = dict(log_to_driver=False, logging_level=logging.ERROR, include_dashboard=False)
    try:
        with _backend_logs_off():
            ray.init(**(dict(address=address) if address else dict(num_cpus=max(2, actors_wanted))), **kw)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"connect to the Ray cluster at {address}" if address else "start a local Ray instance"
        raise MLMProbError(f"cannot {where}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    return True


@contextmanager
def _backend_logs_off():
    """Stderr muted and ``RAY_BACKEND_LOG_LEVEL=fatal`` (unless the user set a level) while ``ray.init`` starts Ray's
    core: its errors go to Ray's log files."""
    if "RAY_BACKEND_LOG_LEVEL" in os.environ:
        yield
        return
    os.environ["RAY_BACKEND_LOG_LEVEL"] = "fatal"
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        del os.environ["RAY_BACKEND_LOG_LEVEL"]


def map_ray(
    load: Callable[[str], object],
    run: Callable[[object, T], R],
    chunks: Iterable[T],
    devices: Sequence[str],
    *,
    address: str | None = None,
    window: int = WINDOW,
) -> Iterator[R]:
    """Yield ``run(state, chunk)`` for every chunk, in order, computed by Ray Data actors (one per device, each calling
    ``state = load(device)`` once); ``load`` and ``run`` must be picklable by cloudpickle (bound methods of a picklable
    job, or importable module-level functions)."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise MLMProbError("--engine ray needs Ray: pip install 'mlmprob[ray]'") from None
    if window < 1:
        raise MLMProbError(f"the Ray window must be >= 1 chunk, got {window}")
    windows = chunked(chunks, window)
    first = next(windows, None)
    if first is None:  # nothing left to do (e.g. a resumed run that was complete): no Ray at all
        return
    started = False
    try:
        with _quiet_ray():
            started = _connect(ray, address, len(devices))
            res = ray.cluster_resources()
            plan = plan_actors(list(devices), res.get("CPU", 0), res.get("GPU", 0))
            for part in chain([first], windows):
                yield from _run_window(ray, plan, load, run, part)
    finally:
        if started:
            ray.shutdown()


def _run_window(ray, plan: ActorPlan, load, run, window: list) -> Iterator:
    items = [{"i": k, "chunk": pickle.dumps(c)} for k, c in enumerate(window)]
    ds = ray.data.from_items(items, override_num_blocks=len(items))  # one chunk per block: one actor call each
    ds = ds.map_batches(
        _ModelActor,
        fn_constructor_args=(load, run, plan.device),
        batch_size=1,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=plan.actors),
        num_cpus=plan.num_cpus,
        num_gpus=plan.num_gpus,
    )
    # Ray Data gives its actors max_restarts=-1 and max_task_retries=-1 (passing them here is deprecated):
    # a dead actor is replaced and the chunks it held are rerun (tests/runtime/test_ray_engine.py kills one)
    pending: dict[int, bytes] = {}
    nxt = 0
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        for i, blob in zip(batch["i"], batch["out"], strict=True):
            i = int(i)
            if i < nxt or i in pending:  # a retried chunk reported twice: keep the first copy
                continue
            status, value = pickle.loads(blob)
            if status != "ok":
                _raise((status, value), "a Ray worker")
            pending[i] = value
        while nxt in pending:
            yield pending.pop(nxt)
            nxt += 1
    if nxt != len(window):
        raise RuntimeError(f"Ray returned {nxt} of {len(window)} chunks")
