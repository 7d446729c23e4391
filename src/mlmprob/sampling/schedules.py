"""Per-epoch schedules (any callable ``epoch -> value``, epochs from 0, burn-in included; numbers become ``Constant``):
target temperature (linear annealing with a floor) and block size.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import MLMProbError

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
    """A callable schedule from a number or a callable.

    >>> as_schedule(2, "block_size")(7)
    2
    """
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
