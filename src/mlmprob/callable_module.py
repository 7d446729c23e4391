"""Modules that are also their main function: ``mlmprob.energy(...)`` calls ``mlmprob.energy.energy(...)`` and
``mlmprob.infill(...)`` calls ``mlmprob.infill.infill(...)``, while ``import mlmprob.energy``, ``from mlmprob import
energy`` and ``mlmprob.energy`` are one object, the module (its other names read as usual). Each such module
calls :func:`make_callable` at its end, so the module is callable however it was first imported."""

from __future__ import annotations

import inspect
import sys
import types


class CallableModule(types.ModuleType):
    """A module whose call is its function of the same name."""

    def __call__(self, *args, **kwargs):
        return getattr(self, self.__name__.rpartition(".")[2])(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:  # read when asked: the function may be imported lazily
        return inspect.signature(getattr(self, self.__name__.rpartition(".")[2]))


def make_callable(name: str) -> None:
    """Make the module ``name`` (already in ``sys.modules``) callable as its function of the same name."""
    module = sys.modules[name]
    module.__class__ = CallableModule
