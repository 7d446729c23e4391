"""The shape of every streamed job, what :func:`~mlmprob.runtime.command.run_command` and the engines of
:func:`~mlmprob.runtime.engine.run_stream` rely on: a picklable frozen dataclass with ``model_spec`` (a
:class:`mlmprob.models.spec.ModelSpec`; a job reading several models names the others in ``extra_model_specs``),
``load(device) -> State`` (once per worker) and ``run(state, units) -> (rows, skipped)`` (rows in input order,
``(id, reason)`` of the units skipped). Every job derives from :class:`mlmprob.models.spec.ModelJob`, which loads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(eq=False)
class State:
    """What a worker holds after ``job.load(device)``: ``mlm``, the model's reader
    (:class:`mlmprob.models.reader.Reader`, its forward budget set). A job that prepares more (a pair
    planner, a pivot, the wild type's caches) subclasses it."""

    mlm: Any
    on_progress: Callable[[int, dict], None] | None = field(default=None, init=False, repr=False)

    def advance(self, steps: int = 1, **shown) -> None:
        """Move the run's progress bar ``steps`` steps into the unit in hand, ``shown`` beside it, when the runner
        hooked this state (one local device, the bar on); elsewhere nothing (the bar moves a chunk at a time)."""
        if self.on_progress is not None:
            self.on_progress(steps, shown)


class Job(Protocol):
    """A streamed job (see the module docstring)."""

    @property
    def model_spec(self) -> Any: ...

    def load(self, device: str = "auto") -> State: ...

    # state: what this job's load() returned (a State or the job's own subclass of it)
    def run(self, state: Any, units: Sequence) -> tuple[list[dict], list[tuple[str, str]]]: ...


def state_of(job, state) -> State:
    """``state`` if it is a :class:`State`, else an error naming the job that returned it (a job's ``load``
    and ``prepare`` return one: the runner reads its ``mlm``)."""
    if not isinstance(state, State):
        raise TypeError(f"{type(job).__name__}.load returned {type(state).__name__}, not a runtime.job.State")
    return state
