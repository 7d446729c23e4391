"""The loop every streaming command shares: input units -> shard -> skip what the output already holds
-> chunks -> one process per device (or Ray actors) -> a committed writer, with a progress bar.

A command supplies ``load(device) -> state`` and ``run(state, chunk) -> (rows, skipped)`` (picklable,
e.g. bound methods of a frozen dataclass), where every row is a dict with the unit's ``id`` and
``skipped`` lists ``(id, reason)`` of units it refused (``--skip-invalid``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from itertools import islice
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from .pool import map_ordered
from .shard import Shard
from .writers import ResultWriter

T = TypeVar("T")


@dataclass
class StreamSummary:
    """What a streamed run did: rows written now, units already in the output, units skipped."""

    written: int = 0
    already: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of ``size`` consecutive items (the last may be shorter).

    >>> list(chunked(range(5), 2))
    [[0, 1], [2, 3], [4]]
    """
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def loader_for(load: Callable, devices: Sequence[str], engine: str, writer: ResultWriter):
    """``(load for run_stream, state or None)``: with one local device the state is loaded here, once, so
    that an unknown model or device fails before any output (the claimed output is then released);
    otherwise every worker process (or Ray actor) calls ``load`` itself and the state is None."""
    if len(devices) != 1 or engine != "local":
        return load, None
    try:
        state = load(devices[0])
    except BaseException:
        writer.close(complete=False)
        raise
    return (lambda device: state), state


def run_stream(load: Callable, run: Callable, units: Iterable, writer: ResultWriter, *,
               shard: Shard = Shard.whole(), devices: Sequence[str] = ("auto",), chunk_size: int = 16,
               engine: str = "local", ray_address: str | None = None, total: int | None = None,
               progress: bool = True, unit_name: str = "seq", key: Callable = lambda u: u.id,
               meta: dict | None = None) -> StreamSummary:
    """Run ``run`` over every unit of ``units`` that is in ``shard`` and not yet in ``writer``'s output;
    ``meta`` goes into the output's ``.meta.json`` when the run completes."""
    from tqdm import tqdm

    summary = StreamSummary()
    old_skipped = [list(x) for x in getattr(writer, "_meta", {}).get("skipped", [])]
    done = writer.done_ids() | {str(x[0]) for x in old_skipped}

    def todo():
        for u in shard.take(units):
            if str(key(u)) in done:
                summary.already += 1
                bar.update(1)
            else:
                yield u

    bar = tqdm(total=total, unit=unit_name, disable=not progress or (total is not None and total < 2),
               file=sys.stderr, dynamic_ncols=True)
    try:
        if engine == "ray":
            from .ray_engine import map_ray
            results = map_ray(load, run, chunked(todo(), chunk_size), list(devices), address=ray_address)
        else:
            results = map_ordered(load, run, chunked(todo(), chunk_size), list(devices))
        for rows, skipped in results:
            writer.write(rows)
            summary.written += len(rows)
            summary.skipped.extend(skipped)
            bar.update(len(rows) + len(skipped))
    finally:
        bar.close()
    writer.close(complete=True, skipped=old_skipped + [list(x) for x in summary.skipped], shard=str(shard), **(meta or {}))
    return summary
