"""The loop every streaming command shares: units -> shard -> skip what the output holds -> chunks -> one process per
device (or Ray actors) -> a committed writer, with a progress bar; reached through
:func:`mlmprob.runtime.command.run_command`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TypeVar

from .job import State
from .pool import map_ordered
from .shard import Shard
from .writers import ResultWriter

T = TypeVar("T")


@dataclass
class StreamSummary:
    """What a streamed run did: ``units`` computed now, the ``written`` rows they gave (rows already in
    the output are not written again), units ``already`` in the output, units ``skipped`` now (``(id,
    reason)``), and the progress bar's ``total`` (None when it was not counted)."""

    written: int = 0
    already: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    units: int = 0
    total: int | None = None


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of ``size`` consecutive items (the last may be shorter).

    >>> list(chunked(range(5), 2))
    [[0, 1], [2, 3], [4]]
    """
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def run_stream(
    load: Callable,
    run: Callable,
    units: Iterable,
    writer: ResultWriter,
    *,
    shard: Shard = Shard.whole(),
    devices: Sequence[str] = ("auto",),
    chunk_size: int = 16,
    engine: str = "local",
    ray_address: str | None = None,
    total: int | None = None,
    progress: bool = True,
    unit_name: str = "seq",
    unit_steps: int = 1,
    key: Callable = lambda u: u.id,
    last_row_id: Callable | None = None,
    on_rows: Callable[[list[dict]], None] | None = None,
    meta: dict | None = None,
) -> StreamSummary:
    """Run ``run`` over every unit of ``units`` that is in ``shard`` and not yet in ``writer``'s output; ``meta`` goes
    into the output's ``.meta.json`` when the run completes.

    A unit is done when its id (``key``) was skipped before or the id of its last row (``last_row_id``, default its
    id) is in the output; a unit cut by a kill is computed again and only its missing rows written. The bar counts
    ``total`` units of ``unit_steps`` steps each (moved step by step by a state loaded here,
    :meth:`~mlmprob.runtime.job.State.advance`, else a chunk at a time); ``on_rows`` sees every batch written."""
    from collections import deque

    summary = StreamSummary(total=total)
    old_skipped = writer.skipped()
    done_skipped, done = writer.skipped_ids(), writer.done_ids()
    last = last_row_id or key
    sizes: deque[int] = deque()  # units per chunk in flight (results come back in chunk order)

    def todo():
        for u in shard.take(units):
            if str(key(u)) in done_skipped or str(last(u)) in done:
                summary.already += 1
                bar.update(unit_steps)
            else:
                yield u

    def chunks():
        for c in chunked(todo(), chunk_size):
            sizes.append(len(c))
            yield c

    steps = None if total is None else total * unit_steps
    bar = progress_bar(steps, unit_name, disable=not progress or (steps is not None and steps < 2))
    hook = StepHook(bar)
    try:
        if engine == "ray":
            from .ray_engine import map_ray

            results = map_ray(load, run, chunks(), list(devices), address=ray_address)
        else:
            here = len(devices) == 1 and not bar.disable  # map_ordered runs one device in this process
            results = map_ordered(hook.hooked(load) if here else load, run, chunks(), list(devices))
        for rows, skipped in results:
            rows = [r for r in rows if str(r["id"]) not in done] if done else rows
            writer.write(rows)
            if on_rows is not None:
                on_rows(rows)
            n = sizes.popleft()
            summary.written += len(rows)
            summary.units += n - len(skipped)
            summary.skipped.extend(skipped)
            hook.chunk_done(n * unit_steps)
    finally:
        hook.release()
        bar.close()
    writer.close(
        complete=True, skipped=old_skipped + [list(x) for x in summary.skipped], shard=str(shard), **(meta or {})
    )
    return summary


def progress_bar(total: int | None, unit: str, desc: str | None = None, disable: bool = False):
    """The package's progress bar: tqdm on stderr (stdout holds only results), ``total`` ``unit``s."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, disable=disable, file=sys.stderr, dynamic_ncols=True)


class StepHook:
    """The states :func:`run_stream` loads in this process, hooked to its ``bar`` (:meth:`State.advance`): the
    steps a unit reports move the bar at once; :meth:`chunk_done` adds what the chunk's units did not report."""

    def __init__(self, bar):
        self.bar, self.reported, self.states = bar, 0, []

    def hooked(self, load: Callable) -> Callable:
        def load_here(device):
            state = load(device)
            if isinstance(state, State):
                state.on_progress = self.advance
                self.states.append(state)
            return state

        return load_here

    def advance(self, steps: int, shown: dict) -> None:
        self.reported += steps
        if shown:
            self.bar.set_postfix(shown, refresh=False)
        self.bar.update(steps)

    def chunk_done(self, steps: int) -> None:
        self.bar.update(max(steps - self.reported, 0))
        self.reported = 0

    def release(self) -> None:
        """Unhook the states (one given by a library caller outlives the run)."""
        for state in self.states:
            state.on_progress = None
