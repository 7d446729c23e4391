"""The MCMC methods, Metropolis-Hastings and degenerate Gibbs: their specs, kernel factories and registry entries."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..argtypes import ladder, nonnegative_float, positive_float, positive_int
from ..errors import MLMProbError
from ..settings import check_ladder
from .options import INITS, ORDERS, LinearAnneal, LinearBlockSize, ScheduleLike, as_schedule, check_moves, schedule_text
from .registry import (
    Method,
    NotForMethod,
    ProposalSpec,
    kernel_of,
    option,
    order_json,
    register,
    shared_field,
    takers_of,
)

if TYPE_CHECKING:
    from ..likelihood.orders import OrderSpec

# K, ("linear", START, END[, EPOCHS]) as ``mlmprob sample --block-size START:END[:EPOCHS]`` parses it, or a schedule
BlockLike = int | tuple | ScheduleLike


def block_size_arg(text: str):
    """``--block-size``: ``K`` or ``START:END[:EPOCHS]`` (linear decrease, Goyal et al. App. D)."""
    parts = text.split(":")
    try:
        nums = [positive_int(p) for p in parts]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"block size must be K or START:END[:EPOCHS] with positive integers, got {text!r}"
        ) from None
    if len(nums) == 1:
        return nums[0]
    if len(nums) in (2, 3):
        return ("linear", *nums)
    raise argparse.ArgumentTypeError(f"block size must be K or START:END[:EPOCHS], got {text!r}")


def block_text(block_size) -> str:
    """``block_size`` as ``--block-size`` writes it (a schedule object: its stable text)."""
    if isinstance(block_size, tuple):
        return ":".join(str(x) for x in block_size[1:])
    if callable(block_size):
        return schedule_text(block_size)
    return str(block_size)


# -- MCMC: Metropolis-Hastings and degenerate Gibbs -----------------------------------------------------------
@dataclass(frozen=True)
class MCMCSpec(ProposalSpec):
    """The fields of the MCMC samplers: blocks of ``block_size`` positions swept in ``order`` from ``init``."""

    burn_in: int = shared_field("burn_in", 5)
    block_size: BlockLike = option(
        1,
        "K, or START:END[:EPOCHS] decreasing linearly",
        type=block_size_arg,
        json=lambda s, v: block_text(v),
        stored=lambda s: schedule_text(s.schedules()[0]),
    )
    order: OrderSpec = option(
        "random", "order in which positions are visited within an epoch", choices=("random", "l2r"), json=order_json
    )
    init: str = option(
        "given", "initial state of the free positions: the input, the MLM's argmax, or random tokens", choices=INITS
    )

    def __post_init__(self):
        super().__post_init__()
        if self.init not in INITS:
            raise MLMProbError(f"init must be one of {INITS}, got {self.init!r}")
        if isinstance(self.order, str) and self.order not in ("random", "l2r"):
            if self.order in ORDERS:
                why = f"{self.method} sweeps in random or l2r order"
                raise NotForMethod("order", self.order, takers_of("order", self.order), self.method, True, why)
            raise MLMProbError(f"order must be 'random' or 'l2r', got {self.order!r}")
        self.schedules()  # block size and annealing schedules check their numbers

    def _block_schedule(self):
        bs = self.block_size
        if isinstance(bs, tuple):
            if len(bs) not in (3, 4) or bs[0] != "linear":
                raise MLMProbError(f"block_size must be K, ('linear', START, END[, EPOCHS]) or a schedule, got {bs!r}")
            _, start, end, *n = bs
            bs = LinearBlockSize(start, end, n[0] if n else self.total_epochs)
        if not callable(bs) and (isinstance(bs, bool) or not isinstance(bs, int) or bs < 1):
            raise MLMProbError(
                f"block_size must be a positive integer K, ('linear', START, END[, EPOCHS]) or a schedule, got {bs!r}"
            )
        return as_schedule(bs, "block_size")

    def schedules(self):
        return self._block_schedule(), None


@dataclass(frozen=True)
class MHSpec(MCMCSpec):
    """Metropolis-Hastings: the target ``exp(-E / T)`` at ``target_temperature`` (a number annealed by ``anneal`` per
    epoch down to ``temperature_floor``, or a schedule); ``informed``, ``sites``: the exact moves of
    :mod:`~mlmprob.mcmc.moves` instead of blocks, ``delayed`` their two-stage test; ``temperatures``: replica exchange.
    """

    method: str = shared_field("method", "mh")
    target_temperature: ScheduleLike = option(
        1.0,
        "temperature of the target distribution exp(-E / T)",
        type=positive_float,
        json=lambda s, v: schedule_text(v) if callable(v) else v,
        stored=lambda s: schedule_text(s.schedules()[1]),
    )
    # stored=False: the run file stores them in target_temperature's schedule (LinearAnneal(...)), as before
    anneal: float = option(
        0.0, "subtract this from the target temperature per epoch", type=nonnegative_float, stored=False
    )
    temperature_floor: float = option(
        0.05, "lowest target temperature annealing reaches", type=positive_float, stored=False
    )
    informed: bool = option(
        False,
        "locally balanced moves (Zanella 2020): the sites and residues drawn by the cached rows, every move a "
        "change; exact",
        action="store_true",
        recorded="unless default",
    )
    sites: int = option(
        1,
        "residues one move changes, drawn from the cached rows (exact; with block size 1)",
        type=positive_int,
        recorded="unless default",
    )
    delayed: bool = option(
        False,
        "delayed acceptance (Christen & Fox 2005): a first stage from the cached rows screens each move before its "
        "rows are read; exact (with informed or sites > 1)",
        action="store_true",
        recorded="unless default",
    )
    temperatures: tuple[float, ...] | None = option(
        None,
        "replica exchange: the chains in rungs at these target temperatures, increasing from the target's (chain "
        "r*C + c at rung r: the first C chains sample the target), adjacent rungs swapping states at the end of each "
        "epoch by the exact rule",
        type=ladder,
        metavar="T1,T2,...",
        example="1,2",
        json=lambda s, v: None if v is None else list(v),
        recorded="unless default",
    )

    def __post_init__(self):
        for name in ("anneal", "temperature_floor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):  # a str, None: before any comparison
                raise MLMProbError(f"{name} must be a number, got {type(value).__name__} {value!r}")
        if not (self.anneal >= 0) or math.isinf(self.anneal):
            raise MLMProbError(f"anneal must be a finite number >= 0, got {self.anneal!r}")
        if self.anneal > 0 and callable(self.target_temperature):
            raise MLMProbError("give anneal with a number target_temperature, not with a schedule")
        if not callable(self.target_temperature):
            t = self.target_temperature
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0 or math.isinf(t):
                raise MLMProbError(f"target_temperature must be finite and > 0, got {t!r}")
        if self.temperatures is not None:
            object.__setattr__(self, "temperatures", check_ladder(self.temperatures))
            if self.anneal > 0 or callable(self.target_temperature) or self.target_temperature != 1.0:
                raise MLMProbError(
                    "give temperatures (a ladder whose first rung is the target's) or target_temperature/anneal, not "
                    "both"
                )
        super().__post_init__()
        check_moves(self.informed, self.sites, self._block_schedule(), self.proposal, self.order, self.delayed)

    def schedules(self):
        tt = self.target_temperature if self.temperatures is None else self.temperatures[0]
        if self.anneal > 0:
            tt = LinearAnneal(tt, self.anneal, self.temperature_floor)
        else:
            LinearAnneal(1.0, 0.0, self.temperature_floor)  # the floor is checked either way
        return self._block_schedule(), as_schedule(tt, "target_temperature")


@dataclass(frozen=True)
class GibbsSpec(MCMCSpec):
    """Degenerate Gibbs: every proposal accepted (no target temperature)."""

    method: str = shared_field("method", "gibbs")


def _schedule(i: int):
    return lambda spec: spec.schedules()[i]


_mh = kernel_of(".kernels", "MetropolisHastings", block_size=_schedule(0), target_temperature=_schedule(1))
register(Method("mh", MHSpec, _mh, "MH with the MLM's conditionals as proposals"))
_gibbs = kernel_of(".kernels", "DegenerateGibbs", block_size=_schedule(0))
_why = "degenerate Gibbs accepts every proposal: no accept step"
register(Method("gibbs", GibbsSpec, _gibbs, "degenerate Gibbs (every proposal accepted)", no_accept=_why))
