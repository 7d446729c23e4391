"""``DesignSpec``: every setting of a design run (the sampler and the hard constraints), frozen and validated once
where it is made (no torch). The terms (experts, an oracle) are objects beside it; ``hamming`` adds the built-in
Hamming term with that weight (0: none)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..argtypes import checked, finite_float, ladder, nonnegative_int, positive_float, positive_int
from ..errors import MLMProbError
from ..fields import option
from ..settings import Spec, check_count, check_int, check_ladder
from .constraints import motif_patterns

METHODS = ("mh", "anneal", "replica")
#: An expert's energy: ``local`` (``E_local = -PLL``, one masked row per residue), ``raw`` (``E_raw``, as many rows)
#: or ``mutant_marginal`` (EvoProtGrad's score, one unmasked row: ``-Σ_i logit_i(x_i) - logit_i(parent_i)`` read from
#: the forward of ``x``; a different target, cheap, named as such).
EXPERT_KINDS = ("local", "raw", "mutant_marginal")
SCHEDULES = ("geometric", "linear")
#: The most chains times steps one run may take (each step reads every residue of each changed chain per expert).
MAX_CHAIN_STEPS = 100_000_000


#: Fields added after outputs were written without them: recorded only when not at their default (the kernel of
#: the first release), so those outputs resume and merge as before.
_LATER = {"recorded": "unless default"}


def parse_positions(text: str) -> tuple[int, ...]:
    """``--positions``' text, 1-based residues and ranges (``95-102,105``), as residue numbers."""
    from ..positions import parse_numbers  # (imports torch: only when the flag is given)

    return tuple(parse_numbers(text, "positions"))


def parse_allowed(text: str) -> tuple[int, str]:
    """An ``--allowed`` text, ``POS:RESIDUES`` (1-based), as a ``(position, residues)`` pair."""
    pos, sep, letters = text.partition(":")
    if not sep or not pos.strip().isdigit():
        raise MLMProbError(f"allowed must be POS:RESIDUES (1-based), got {text!r}")
    return int(pos), letters.strip()


@dataclass(frozen=True)
class DesignSpec(Spec):
    """The settings of one design run. ``method``: ``mh`` (Metropolis-Hastings at ``temperature``), ``anneal``
    (simulated annealing from ``anneal_start`` to ``anneal_end`` over the steps, ``anneal_schedule``) or ``replica``
    (parallel tempering: ``chains`` chains at each of ``temperatures``, adjacent rungs swapping states every
    ``swap_every`` steps by the exact swap rule). ``steps``: proposals per chain. ``proposal``: the expert whose
    conditionals propose (its name; None: the first expert; ``uniform``: uniform over the allowed residues), at
    ``proposal_temperature``. Moves (:mod:`~mlmprob.mcmc.moves`, each exact): ``sites`` residues per proposal at
    most, ``informed`` (locally balanced: sites and residues chosen by the rows already read, every proposal a
    change), ``delayed`` (delayed acceptance: the cheap terms and the rows already read screen each proposal before
    the experts read it). Constraints: ``positions`` (1-based residues that may change; None: all), ``allowed``
    (``(position, residues)`` pairs), ``max_mutations``, ``forbid`` and ``require`` (regular expressions of bounded
    cost over upper-case residues, :mod:`~mlmprob.designing.motifs`, or preset names), ``start_invalid`` (start at a
    parent outside ``C``), ``keep_parent_motifs`` (a forbidden motif the parent has is tolerated where it is: only
    new occurrences leave ``C``). ``mlmprob design``'s flags of the fields declared with
    :func:`~mlmprob.fields.option` are made from them (``--positions`` and ``--allowed`` read text by
    :func:`parse_positions` and :func:`parse_allowed`; ``--temperatures`` by :func:`mlmprob.argtypes.ladder`)."""

    method: str = option(
        "mh",
        "mh: exact samples of the target; anneal: optimise (a temperature schedule); replica: parallel tempering",
        choices=METHODS,
    )
    chains: int = option(4, "chains (per temperature for replica)", type=positive_int)
    steps: int = option(100, "proposals per chain", type=positive_int)
    temperature: float = option(1.0, "the target's temperature τ", type=positive_float)
    proposal: str | None = option(None, "the proposing expert's name, or uniform (default: the first)")
    proposal_temperature: float = option(
        1.0, "temperature of the expert's proposal (the ratio corrects for it)", type=positive_float
    )
    sites: int = option(1, "residues one proposal may change (exact)", type=positive_int, **_LATER)
    informed: bool = option(
        False,
        "locally balanced moves: sites and residues chosen from the rows already read, every move a change",
        action="store_true",
        **_LATER,
    )
    delayed: bool = option(
        False,
        "delayed acceptance: screen each proposal by the oracle and the rows already read before the experts read it "
        "(exact: a second stage corrects)",
        action="store_true",
        **_LATER,
    )
    hamming: float = option(0.0, "weight of the Hamming distance term", type=finite_float)
    positions: tuple[int, ...] | None = option(
        None, "1-based residues that may change, e.g. 95-102,105", type=checked(parse_positions), shown="all"
    )
    allowed: tuple[tuple[int, str], ...] = option(
        (),
        "e.g. 31:STY (repeatable)",
        type=checked(parse_allowed),
        action="append",
        metavar="POS:RESIDUES",
        shown="none",
    )
    max_mutations: int | None = option(None, "at most this many mutations from the parent", type=nonnegative_int)
    forbid: tuple[str, ...] = option((), "regex or preset (repeatable)", action="append", metavar="MOTIF", shown="none")
    require: tuple[str, ...] = option((), "regex (repeatable)", action="append", metavar="MOTIF", shown="none")
    start_invalid: bool = option(False, "start at a parent that violates a constraint", action="store_true")
    keep_parent_motifs: bool = option(
        False,
        "tolerate the forbidden motifs the parent already has, where it has them (forbid only new ones)",
        action="store_true",
    )
    anneal_start: float = option(10.0, "anneal: the first temperature", type=positive_float, methods=("anneal",))
    anneal_end: float = option(0.1, "anneal: the last temperature", type=positive_float, methods=("anneal",))
    anneal_schedule: str = option(
        "geometric", "anneal: how the temperature falls", choices=SCHEDULES, methods=("anneal",)
    )
    temperatures: tuple[float, ...] = option(
        (1.0, 2.0, 4.0),
        "replica exchange's ladder, increasing from the target's, e.g. 1,1.5,2.5",
        type=ladder,
        metavar="T1,T2,...",
        shown="1,2,4",
        methods=("replica",),
    )
    swap_every: int = option(1, "steps between swap rounds", type=positive_int, methods=("replica",))

    def __post_init__(self):
        self._normalise()
        if self.method not in METHODS:
            raise MLMProbError(f"method must be one of {METHODS}, got {self.method!r}")
        self._check_method_fields()
        check_count("chains", self.chains, 1_000_000, "each chain is a row of every model read")
        check_int("steps", self.steps, 1, "a positive integer")
        if self.chains * self.steps * len(self.temperatures_used()) > MAX_CHAIN_STEPS:
            raise MLMProbError(f"chains x steps (x temperatures) must be at most {MAX_CHAIN_STEPS:,}")
        for name in ("temperature", "anneal_start", "anneal_end", "proposal_temperature"):
            x = getattr(self, name)
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not (math.isfinite(x) and x > 0):
                raise MLMProbError(f"{name} must be a positive number, got {x!r}")
        check_count("sites", self.sites, 1000, "residues one proposal may change")
        for name in ("informed", "delayed", "start_invalid", "keep_parent_motifs"):
            if not isinstance(getattr(self, name), bool):
                raise MLMProbError(f"{name} must be True or False, got {getattr(self, name)!r}")
        check_weight("hamming", self.hamming)
        if self.anneal_start < self.anneal_end:
            raise MLMProbError(
                "anneal_start must be at least anneal_end (the schedule cools), got "
                f"{self.anneal_start} < {self.anneal_end}"
            )
        if self.anneal_schedule not in SCHEDULES:
            raise MLMProbError(f"anneal_schedule must be one of {SCHEDULES}, got {self.anneal_schedule!r}")
        check_ladder(self.temperatures)
        check_int("swap_every", self.swap_every, 1, "a positive integer")
        if self.max_mutations is not None:
            check_int("max_mutations", self.max_mutations, 0, "a non-negative integer or None")
        for name in ("forbid", "require"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(m, str) and m for m in value):
                raise MLMProbError(f"{name} must be a tuple of non-empty motifs, got {value!r}")
            motif_patterns(value, name)  # a bad or costly motif: here, before anything loads
        if self.positions is not None and (isinstance(self.positions, str) or not self.positions):
            raise MLMProbError(
                f"positions must be None (all) or a non-empty tuple of residue numbers, got {self.positions!r}"
            )
        for pair in self.allowed:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], str)):
                raise MLMProbError(f"allowed must hold (position, residues) pairs, got {pair!r}")
            if not pair[1]:
                raise MLMProbError(f"position {pair[0]} has an empty allowed set")

    def _normalise(self) -> None:
        """Lists and ranges (the API, JSON) held as tuples: the spec is hashable, its settings read the same."""

        def tup(x):
            return tuple(x) if isinstance(x, (list, range)) else x

        for name in ("positions", "allowed", "forbid", "require"):  # a number here was "'int' object is not iterable"
            value = getattr(self, name)
            if value is not None and not isinstance(value, (tuple, list, range, str)):
                raise MLMProbError(f"{name} must be a tuple or list, got {type(value).__name__} {value!r}")
        object.__setattr__(self, "positions", tup(self.positions))
        object.__setattr__(self, "allowed", tuple(tup(p) for p in tup(self.allowed)))
        for name in ("forbid", "require", "temperatures"):
            object.__setattr__(self, name, tup(getattr(self, name)))

    def _check_method_fields(self) -> None:
        for f in dataclasses.fields(self):
            methods = f.metadata.get("methods")
            if methods and self.method not in methods and getattr(self, f.name) != f.default:
                raise MLMProbError(
                    f"{f.name} is for method={methods[0]!r}, got {getattr(self, f.name)!r} with method={self.method!r}"
                )

    def uses(self, name: str) -> bool:
        methods = self.__dataclass_fields__[name].metadata.get("methods")
        return not methods or self.method in methods

    def temperatures_used(self) -> tuple[float, ...]:
        """The temperature of each group of ``chains`` chains (one group but for replica exchange)."""
        return self.temperatures if self.method == "replica" else (self.temperature,)

    def temperature_at(self, step: int) -> float:
        """Annealing's temperature at ``step`` (0-based; the first step runs at ``anneal_start``, the last at
        ``anneal_end``); the fixed temperature otherwise.

        >>> s = DesignSpec(method="anneal", steps=3, anneal_start=4.0, anneal_end=1.0)
        >>> [s.temperature_at(t) for t in range(3)]
        [4.0, 2.0, 1.0]
        """
        if self.method != "anneal":
            return self.temperature
        f = step / (self.steps - 1) if self.steps > 1 else 1.0
        if self.anneal_schedule == "linear":
            return self.anneal_start + f * (self.anneal_end - self.anneal_start)
        return self.anneal_start * (self.anneal_end / self.anneal_start) ** f

    def constraint_keywords(self) -> dict:
        """The keywords of :meth:`~mlmprob.designing.constraints.Constraints.build`."""
        names = ("positions", "allowed", "max_mutations", "forbid", "require", "start_invalid", "keep_parent_motifs")
        return {n: getattr(self, n) for n in names}

    def kernel(self, target):
        """The MH kernel (``init``, ``step``) on ``target`` with its fixed parts bound."""
        from .kernels import mh_kernel

        name = self.proposal or next(iter(target.experts), None)
        proposal = None if name == "uniform" else target.expert_index(name)
        return mh_kernel(target, proposal, self.proposal_temperature, self.sites, self.informed, self.delayed)


def check_weight(name: str, w) -> None:
    """A term's weight: a finite number no larger in size than the command line's numbers (``argtypes.LIMIT``, 10**9:
    ``--hamming``, ``--oracle-weight`` and ``--expert``'s weight); larger ones only make every total infinite or NaN."""
    from ..argtypes import LIMIT

    if isinstance(w, bool) or not isinstance(w, (int, float)) or not (math.isfinite(w) and abs(w) <= LIMIT):
        raise MLMProbError(f"{name} must be a finite number no larger than {LIMIT:g}, got {w!r}")
