"""A run's model: which one and how it is loaded (:class:`ModelSpec`: its reader carries the forward budget settled
for the device, so no algorithm takes one), and the base of every streamed job (:class:`ModelJob`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..defaults import DTYPE
from ..runtime.job import State
from .forward import auto_batch_tokens
from .reader import Reader, reader_of


@dataclass(frozen=True)
class ModelSpec:
    """Which model a run reads and how: ``model`` (a built-in name, a folder or a hub id), ``dtype``
    (:mod:`mlmprob.defaults`: the CLI's and ``load_mlm``'s default), ``allow_pickle`` and the forward budget
    ``batch_tokens`` (None: the device's default)."""

    model: str
    dtype: str | None = DTYPE
    allow_pickle: bool = False
    batch_tokens: int | None = None

    def load(self, device: str = "auto") -> Reader:
        """The model on ``device`` (``mlmprob.models.load_mlm``, looked up when called), with the budget."""
        from . import load_mlm

        return self.reader(load_mlm(self.model, device=device, dtype=self.dtype, allow_pickle=self.allow_pickle))

    def reader(self, mlm) -> Reader:
        """A loaded model (any ``MaskedLM``) behind the contract, with this spec's budget settled for its device."""
        return reader_of(mlm, auto_batch_tokens(mlm, self.batch_tokens))


@dataclass(frozen=True, kw_only=True)
class ModelJob:
    """The base of every streamed job (:mod:`mlmprob.runtime.job`): ``model_spec`` (a keyword, :class:`ModelSpec`),
    ``load(device)`` (the one loading block of the package: :meth:`ModelSpec.load`, then :meth:`prepare`, which
    makes the worker state from a model loaded here or given) and ``run``."""

    model_spec: ModelSpec

    @property
    def extra_model_specs(self) -> tuple[ModelSpec, ...]:
        """The models a job reads beside ``model`` (a design's other experts), loaded by :meth:`load` in order."""
        return ()

    def load(self, device: str = "auto") -> State:
        """The worker state on ``device`` (called once per worker): every model of the job loaded once."""
        mlm = self.model_spec.load(device)
        more = [s.load(device) for s in self.extra_model_specs]
        return self.prepare_models(mlm, more) if more else self.prepare(mlm)

    def prepare_models(self, mlm, more: Sequence) -> State:
        """The worker state around ``mlm`` and ``more``, the models of :attr:`extra_model_specs` (in order)."""
        raise NotImplementedError(f"{type(self).__name__} reads one model")

    def prepare(self, mlm) -> State:
        """The worker state around a loaded model: its reader with the run's budget."""
        return State(self.model_spec.reader(mlm))

    def run(self, state: Any, units: Sequence) -> tuple[list[dict], list[tuple[str, str]]]:
        """Result rows of one chunk of units (in input order) and the ``(id, reason)`` of those skipped;
        ``state`` is the :class:`~mlmprob.runtime.job.State` (or the subclass) this job's ``prepare`` made."""
        raise NotImplementedError
