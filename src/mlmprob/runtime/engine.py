"""The loop every streaming command shares: units -> shard -> skip what the output holds -> chunks -> one process per
device (or Ray actors) -> a committed writer, with a progress bar; reached through
:func:`mlmprob.runtime.command.run_command`."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .job import State
from .pool import chunked, map_ordered
from .shard import Shard
from .writers import ResultWriter


@dataclass
class StreamSummary:
    """What a streamed run did: ``units`` computed now, the ``written`` rows they gave (not those already in the
    output), units ``already`` in the output, units ``skipped`` now (``(id, reason)``), the progress ``total``."""

    written: int = 0
    already: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    units: int = 0
    total: int | None = None


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
    summary = StreamSummary(total=total)
    old_skipped = writer.skipped()
    done_skipped, done = {str(x[0]) for x in old_skipped}, writer.done_ids()
    last, devices = last_row_id or key, list(devices)
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

            results = map_ray(load, run, chunks(), devices, address=ray_address)
        else:
            here = len(devices) == 1 and not bar.disable  # map_ordered runs one device in this process
            results = map_ordered(hook.hooked(load) if here else load, run, chunks(), devices)
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
    skipped = old_skipped + [list(x) for x in summary.skipped]
    writer.close(complete=True, skipped=skipped, shard=str(shard), **(meta or {}))
    return summary


def progress_bar(total: int | None, unit: str, desc: str | None = None, disable: bool = False):
    """The package's progress bar: tqdm on stderr (stdout holds only results), ``total`` ``unit``s."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, disable=disable, file=sys.stderr, dynamic_ncols=True)


class StepHook:
    """The states :func:`run_stream` loads in this process, hooked to its ``bar`` (:meth:`State.advance`); a chunk's
    steps its units did not report are added when it is done."""

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
