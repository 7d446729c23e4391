"""The samplers' settings that need no tensors (choices, defaults, bounds, checks, :class:`ProposalConfig`, the
per-epoch schedules: any callable ``epoch -> value``, epochs from 0 with burn-in, numbers becoming ``Constant``), so
that building a spec or a parser imports no torch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import MLMProbError
from ..settings import check_count, check_int

INITS = ("given", "greedy", "random")
ORDERS = ("random", "l2r", "r2l")  # the named orders (MCMC sweeps take the first two)
SCORES = ("confidence", "margin", "entropy")
SCHEDULES = ("linear", "cosine")
STRATEGIES = ("mask_predict", "easy_first")  # mask-predict's re-masking rules
DEFAULT_ITERATIONS = 10
DEFAULT_STEPS = 8
DEFAULT_THRESHOLD = 0.05
DEFAULT_DRAFT_K = 4
#: The most remasking steps a draw may take: each is one sequential model call per chain, so the cap bounds a
#: draw's work at ``steps + MAX_REMASK_STEPS`` calls whatever number was typed.
MAX_REMASK_STEPS = 10_000
#: The most mask-predict rounds a draw may take: each is one sequential model call per chain and one more copy of
#: the ids kept in the draw's history, so the cap bounds both whatever number was typed.
MAX_ITERATIONS = 10_000


@dataclass(frozen=True)
class ProposalConfig:
    """How an MLM conditional is modified before proposing from it: ``temperature`` divides the logits (0: greedy),
    ``top_p`` keeps the nucleus (:mod:`mlmprob.sampling.proposals` states the rule)."""

    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self):
        for name, value in (("proposal_temperature", self.temperature), ("top_p", self.top_p)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):  # a str, None: not torch's message
                raise MLMProbError(f"{name} must be a number, got {type(value).__name__} {value!r}")
        if not (self.temperature >= 0.0) or self.temperature == float("inf"):
            raise MLMProbError(f"proposal_temperature must be a finite number >= 0, got {self.temperature}")
        if not (0.0 < self.top_p <= 1.0):
            raise MLMProbError(f"top_p must lie in (0, 1], got {self.top_p}")


def check_positive_int(value, name: str, allow_none: bool = False):
    if value is not None or not allow_none:
        check_int(name, value, 1, "a positive integer")


def check_iterations(iterations) -> int:
    """Mask-predict's rounds: a positive integer of at most :data:`MAX_ITERATIONS` (the spec's and
    :func:`~mlmprob.sampling.maskpredict.mask_predict`'s one check)."""
    return check_count("iterations", iterations, MAX_ITERATIONS, "each is a model call per chain")


def check_unmasking(score, steps, schedule, block_length, remask, remask_steps) -> None:
    """One-line errors for bad ``Unmasking`` settings (also checked where a sampler spec is made)."""
    if score not in SCORES:
        raise MLMProbError(f"score must be one of {SCORES}, got {score!r}")
    if schedule not in SCHEDULES:
        raise MLMProbError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    check_positive_int(steps, "steps")
    check_positive_int(block_length, "block_length", allow_none=True)
    check_int("remask_steps", remask_steps, 0, "a non-negative integer")
    if isinstance(remask, bool) or not isinstance(remask, (int, float)) or not 0.0 <= remask <= 1.0:
        raise MLMProbError(f"remask must be a probability in [0, 1], got {remask!r}")
    if remask_steps > MAX_REMASK_STEPS:
        raise MLMProbError(
            f"remask_steps must be at most {MAX_REMASK_STEPS:,} (each is a model call per chain), got {remask_steps!r}"
        )
    if remask_steps and remask == 0:
        raise MLMProbError(
            f"remask_steps ({remask_steps}) needs remask > 0: with remask 0 a remasking step masks "
            "nothing and changes nothing; give --remask P or leave --remask-steps out"
        )


def check_adaptive(score, threshold, max_tokens, pair_top_k) -> None:
    """One-line errors for bad ``Adaptive`` settings (also checked where a sampler spec is made)."""
    if score not in SCORES:
        raise MLMProbError(f"score must be one of {SCORES}, got {score!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not threshold >= 0:
        raise MLMProbError(f"threshold must be a number >= 0, got {threshold!r}")
    check_positive_int(max_tokens, "max_tokens", allow_none=True)
    check_positive_int(pair_top_k, "pair_top_k", allow_none=True)


#: The most sites one MH move may change (the design kernel's bound).
MAX_SITES = 1000


def check_moves(informed, sites, block_size, proposal: ProposalConfig, order, delayed=False) -> None:
    """One-line errors for MH's moves (:mod:`~mlmprob.mcmc.moves`): ``informed``, ``delayed`` bools, ``sites`` a
    positive integer, ``delayed`` only with moves (a one-site move drawn from its own row would pass any first stage).
    The moves choose their own sites from the cached rows and are exact with ``block_size`` 1 (a number or a
    schedule), random ``order`` and an untruncated, tempered proposal (``top_p`` 1, temperature > 0)."""
    for name, value in (("informed", informed), ("delayed", delayed)):
        if not isinstance(value, bool):
            raise MLMProbError(f"{name} must be True or False, got {value!r}")
    check_count("sites", sites, MAX_SITES, "residues one move may change")
    if not informed and sites == 1:
        if delayed:
            raise MLMProbError("delayed=True screens moves: give it with informed=True or sites > 1")
        return
    what = ", ".join(["informed=True"] * informed + [f"sites={sites}"] * (sites > 1)) + ": the moves"
    one = block_size == 1 if not callable(block_size) else isinstance(block_size, Constant) and block_size.value == 1
    if not one:
        shown = getattr(block_size, "value", block_size)
        raise MLMProbError(f"{what} choose their own sites, so block_size must be 1, got {shown!r}")
    if order != "random":
        raise MLMProbError(f"{what} choose their own sites, so order must be 'random', got {order!r}")
    if proposal.top_p < 1.0:
        raise MLMProbError(
            f"{what} need the whole proposal (a nucleus can make the reverse move impossible), "
            f"so top_p must be 1, got {proposal.top_p!r}"
        )
    if proposal.temperature == 0.0:
        raise MLMProbError(f"{what} draw from the tempered rows, so proposal_temperature must be > 0, got 0")


Schedule = Callable[[int], float]
ScheduleLike = int | float | Schedule


@dataclass(frozen=True)
class Constant:
    """The same value at every epoch.

    >>> Constant(0.8)(5)
    0.8
    """

    value: float

    def __call__(self, epoch: int) -> float:
        return self.value


@dataclass(frozen=True)
class LinearAnneal:
    """``max(floor, start - rate * epoch)``: the linear annealing of Goyal et al. (Table 4 subtracts
    0.02, 0.04 or 0.06 from the target temperature per epoch). ``floor`` must be positive.

    >>> s = LinearAnneal(start=1.0, rate=0.25, floor=0.1)
    >>> [s(e) for e in range(6)]
    [1.0, 0.75, 0.5, 0.25, 0.1, 0.1]
    """

    start: float = 1.0
    rate: float = 0.02
    floor: float = 0.05

    def __post_init__(self):
        if not self.floor > 0 or self.floor == float("inf"):  # an infinite floor: every epoch's target at inf
            raise MLMProbError(f"annealing floor (temperature_floor) must be finite and > 0, got {self.floor}")
        if self.rate < 0 or self.start <= 0:
            raise MLMProbError(f"annealing needs start > 0 and rate >= 0, got start={self.start}, rate={self.rate}")

    def __call__(self, epoch: int) -> float:
        return max(self.floor, self.start - self.rate * epoch)


@dataclass(frozen=True)
class LinearBlockSize:
    """Block size decreasing linearly from ``start`` at epoch 0 to ``end`` at epoch ``epochs - 1``
    (rounded), then ``end``: large moves first, single sites at the end (Goyal et al., App. D).

    >>> s = LinearBlockSize(start=4, end=1, epochs=4)
    >>> [s(e) for e in range(6)]
    [4, 3, 2, 1, 1, 1]
    """

    start: int
    end: int = 1
    epochs: int = 10

    def __post_init__(self):
        if self.start < 1 or self.end < 1 or self.epochs < 1:
            raise MLMProbError(f"block sizes and epochs must be >= 1, got {self}")

    def __call__(self, epoch: int) -> int:
        if self.epochs == 1 or epoch >= self.epochs - 1:
            return self.end
        frac = epoch / (self.epochs - 1)
        return int(math.floor(self.start + (self.end - self.start) * frac + 0.5))


def as_schedule(value: ScheduleLike, name: str) -> Schedule:
    """A callable schedule from a number or a callable."""
    if callable(value):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Constant(value)
    raise MLMProbError(f"{name} must be a number or a schedule (callable epoch -> value), got {value!r}")


def block_size_at(schedule: Schedule, epoch: int) -> int:
    k = schedule(epoch)
    if int(k) != k or k < 1:
        raise MLMProbError(f"block size must be a positive integer, the schedule gave {k!r} at epoch {epoch}")
    return int(k)


def temperature_at(schedule: Schedule, epoch: int) -> float:
    t = float(schedule(epoch))
    if not (t > 0) or math.isinf(t):
        raise MLMProbError(f"target temperature must be finite and > 0, the schedule gave {t!r} at epoch {epoch}")
    return t


def schedule_text(schedule: Schedule) -> str:
    """A stable text form (for result files): the dataclass repr, else the callable's name."""
    if isinstance(schedule, (Constant, LinearAnneal, LinearBlockSize)):
        return repr(schedule)
    return getattr(schedule, "__qualname__", type(schedule).__name__)
