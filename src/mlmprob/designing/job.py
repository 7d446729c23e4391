"""Design chain by chain, for a stream of rows: the job behind ``mlmprob design`` (:class:`DesignJob`), run by the
one runner (:func:`mlmprob.runtime.command.run_command`). The unit is one chain (:class:`Chain`; for replica
exchange one ladder), run alone with a generator seeded from ``(seed, chain index)`` only, so its row
(:func:`chain_row`) is the same whichever shard, worker, chunk or resumed run computes it. Each worker loads every
expert once and builds the target; an oracle is imported there and its source checked against the digest stored
when the run started (:func:`oracle_digest`)."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import MLMProbError
from ..models.spec import ModelJob, ModelSpec
from ..runtime.job import State
from ..runtime.seeds import seeded_generator
from .spec import DesignSpec

ORACLE_FIELDS = ("oracle_weight", "oracle_maximize", "oracle_sha256")  # recorded with an oracle only


class Chain(NamedTuple):
    """One unit of a streamed design run: chain ``number``, its row id ``chain<number>``."""

    id: str
    number: int


def chains_of(n: int) -> list[Chain]:
    """The ``n`` chains of a run, in order."""
    return [Chain(f"chain{c}", c) for c in range(n)]


def flat_row(row: dict) -> dict:
    """A result row of :class:`~mlmprob.designing.api.DesignResult` with every term's energy as ``energy_<name>``."""
    flat = {k: v for k, v in row.items() if k != "energies"}
    flat.update({f"energy_{n}": e for n, e in row["energies"].items()})
    return flat


def chain_row(target, spec: DesignSpec, seed: int, index: int, meter=None) -> dict:
    """The one row of chain ``index`` (see the module doc): ``spec`` run with one chain (one ladder) on ``target``
    from its parent, with the generator seeded by ``(seed, "record", "chain<index>")``; ``meter``: a
    :class:`~mlmprob.designing.api.StepMeter` told of every step (the row does not depend on it)."""
    from .api import run_design

    rows0, calls0 = target.model_rows, target.oracle_calls
    g = seeded_generator(seed, "record", f"chain{index}")
    result = run_design(target, spec.replace(chains=1), g, progress=meter or False)
    cold = min(result.rows, key=lambda r: r["temperature"])
    row = {"id": f"chain{index}", **flat_row(cold), "chain": index}
    row["model_rows"] = target.model_rows - rows0
    if target.oracle_calls != calls0:
        row["oracle_calls"] = target.oracle_calls - calls0
    if spec.method == "replica":
        rungs = result.stats["temperatures"]
        row["rung_temperatures"] = [r["temperature"] for r in rungs]
        row["rung_acceptance"] = [r["acceptance"] for r in rungs]
        row["rung_swap_rate"] = [r["swap_rate"] for r in rungs[:-1]]
    return row


def chain_rows(target, spec: DesignSpec, seed: int, on_chain=None) -> list[dict]:
    """The rows of every chain of ``spec`` (:func:`chain_row`; the rows ``mlmprob design --seed seed`` writes);
    ``on_chain(done, total)`` after each."""
    rows = []
    for c in range(spec.chains):
        rows.append(chain_row(target, spec, seed, c))
        if on_chain is not None:
            on_chain(c + 1, spec.chains)
    return rows


def import_function(text: str):
    """The callable ``module:function`` (an oracle), imported; a bad name, or a module whose import fails, is
    refused in one line."""
    module, _, name = text.partition(":")
    if not module or not name:
        raise MLMProbError(f"--oracle must be module:function, got {text!r}")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise MLMProbError(f"--oracle {text}: {e}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's module failed as it was imported
        raise MLMProbError(f"--oracle {text}: importing it raised {type(e).__name__}: {e}") from e
    if not callable(fn):
        raise MLMProbError(f"--oracle {text} is not callable")
    return fn


def oracle_digest(text: str) -> str:
    """What a run stores of the code of the oracle ``module:function`` (its configuration's ``oracle_sha256``,
    checked by ``--resume``, ``mlmprob merge`` and each worker): ``sha256:...`` over the source files of its module
    and of its function (or class), when another; ``none: ...`` without a source file (a built-in or compiled
    module). Not covered: what those files import, files or data the oracle reads, the installed packages, and an
    oracle object given to the Python API (it has no stored run)."""
    fn = import_function(text)
    module = sys.modules.get(text.partition(":")[0])
    files = {getattr(module, "__file__", None)}
    for obj in (fn, type(fn)):
        try:
            files.add(inspect.getsourcefile(obj))
            break
        except TypeError:  # a callable object or a built-in: its class, or nothing
            continue
    digests = []
    for path in sorted(f for f in files if f):
        try:
            digests.append(hashlib.sha256(Path(path).read_bytes()).hexdigest())
        except OSError as e:
            raise MLMProbError(f"--oracle {text}: cannot read its source file {path}: {e.strerror or e}") from None
    if not digests:
        return f"none: {text} has no source file to digest"
    return "sha256:" + hashlib.sha256("\n".join(sorted(digests)).encode()).hexdigest()


def expert_labels(experts: Sequence[tuple[str, str, float]]) -> list[str]:
    """Each expert's term name: its model, with ``:raw`` added to a raw expert whose model is also a local one
    (``--expert antiberty --expert antiberty:raw``: ``antiberty`` and ``antiberty:raw``). The same model with the
    same energy twice is one term: refused."""
    pairs = [(name, kind) for name, kind, _ in experts]
    for name, kind in pairs:
        if pairs.count((name, kind)) > 1:
            raise MLMProbError(
                f"--expert {name} is given twice with energy {kind}: the same model and energy is one term; give "
                "one --expert with the weights summed"
            )
    names = [name for name, _ in pairs]
    return [name if names.count(name) == 1 or kind == "local" else f"{name}:{kind}" for name, kind in pairs]


@dataclass(eq=False)
class DesignWorker(State):
    """A design worker's state: ``mlm`` the first expert's reader, ``target`` the target built on every expert,
    ``meter`` the :class:`~mlmprob.designing.api.StepMeter` of its chains when the runner shows their steps."""

    target: object = None
    meter: Any = None


@dataclass(frozen=True)
class DesignJob(ModelJob):
    """Everything a worker needs to run chains of a design (picklable): ``model`` is the first expert, ``experts`` every
    expert as ``(model, kind, weight)`` (empty: ``model``'s ``E_local`` at weight 1; else its first is ``model``),
    ``oracle`` a ``module:function`` (imported by the worker; the command asked for ``--allow-code``) with its weight,
    direction and :func:`oracle_digest` (checked again where it is imported), the parent, the spec and the seed."""

    parent: str = ""
    spec: DesignSpec = field(default_factory=DesignSpec)
    seed: int = 0
    experts: tuple[tuple[str, str, float], ...] = ()
    oracle: str | None = None
    oracle_weight: float = 1.0
    oracle_maximize: bool = True
    oracle_sha256: str | None = None

    def __post_init__(self):
        DesignSpec.check(self.spec)
        if self.experts and self.experts[0][0] != self.model_spec.model:
            raise ValueError(f"the first expert {self.experts[0][0]!r} is not model {self.model_spec.model!r}")
        expert_labels(self.expert_list)

    @property
    def expert_list(self) -> tuple[tuple[str, str, float], ...]:
        return self.experts or ((self.model_spec.model, "local", 1.0),)

    @property
    def extra_model_specs(self) -> tuple[ModelSpec, ...]:
        return tuple(replace(self.model_spec, model=m) for m, _, _ in self.expert_list[1:])

    def settings(self) -> dict:
        """What the rows depend on besides the models' files, as plain JSON values (the output's configuration;
        a resume must match it)."""
        return {
            "parent": self.parent,
            "experts": [list(e) for e in self.expert_list],
            "oracle": self.oracle,
            **{k: getattr(self, k) for k in (ORACLE_FIELDS if self.oracle else ())},
            **self.spec.recorded(),
            "seed": self.seed,
        }

    def prepare(self, mlm) -> State:
        return self.prepare_models(mlm, ())

    def prepare_models(self, mlm, more: Sequence) -> State:
        """The target on the loaded experts (``mlm`` the first, ``more`` the others in order)."""
        from .api import build_target
        from .terms import Expert, Oracle

        if len(more) != len(self.extra_model_specs):
            raise ValueError(f"{len(self.expert_list)} experts, {1 + len(more)} models given")
        readers = [
            self.model_spec.reader(mlm),
            *(s.reader(m) for s, m in zip(self.extra_model_specs, more, strict=True)),
        ]
        labels = expert_labels(self.expert_list)
        terms: list = [
            Expert(r, kind=kind, weight=weight, name=label)
            for r, (_, kind, weight), label in zip(readers, self.expert_list, labels, strict=True)
        ]
        if self.oracle:
            if self.oracle_sha256 is not None and oracle_digest(self.oracle) != self.oracle_sha256:
                raise MLMProbError(f"the oracle {self.oracle} changed since the run started (its source's sha256)")
            terms.append(Oracle(import_function(self.oracle), weight=self.oracle_weight, maximize=self.oracle_maximize))
        return DesignWorker(readers[0], build_target(terms, self.parent, self.spec))

    def run(self, state, units: Sequence[Chain]) -> tuple[list[dict], list[tuple[str, str]]]:
        """One row per chain of the chunk, in order; each step moves the runner's bar when it shows them
        (:meth:`~mlmprob.runtime.job.State.advance`: one worker in this process)."""
        if state.meter is None and state.on_progress is not None:
            from .api import StepMeter

            state.meter = StepMeter(state.target, state.advance)
        return [chain_row(state.target, self.spec, self.seed, u.number, state.meter) for u in units], []
