"""The shape of every streamed job: what :func:`~mlmprob.runtime.command.run_command` (and the worker pool
and Ray actors of :func:`~mlmprob.runtime.engine.run_stream`) may rely on.

A job is a picklable object (a frozen dataclass of plain values: it travels to worker processes and Ray
actors) with

- ``model_spec``: which model it reads and how it is loaded (:class:`mlmprob.models.spec.ModelSpec`:
  model, dtype, allow_pickle, batch_tokens); a job that reads several models (a design's experts) names the
  others in ``extra_model_specs``, loaded by the same block;
- ``load(device) -> State``: the model loaded once per worker on ``device``, behind the model contract
  with the run's forward budget, and whatever the job prepares from it;
- ``run(state, units) -> (rows, skipped)``: result rows of a chunk of units, in input order, and the
  ``(id, reason)`` of the units skipped.

Every job of the package derives from :class:`mlmprob.models.spec.ModelJob`, whose ``load`` is the one
loading block (``ModelSpec.load`` then the job's ``prepare``). This module is in the runtime layer, which
imports no model code: it names the shape, the model layer implements the loading.
"""

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
        """Move the run's progress bar ``steps`` steps into the unit in hand, with ``shown`` beside it: the runner
        hooks (``on_progress``) a state it runs in this process (one local device, the bar on); elsewhere (a
        worker process, a Ray actor, the bar off, library use) nothing, and the bar moves a chunk at a time."""
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
