"""``--shard I/N``: record ``k`` (0-based) belongs to shard ``k % N + 1``: disjoint parts that cover the stream, need
no look-ahead and mix sorted inputs (SLURM arrays, Kubernetes indexed jobs and torchrun ranks map onto it)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from ..errors import MLMProbError

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``.

    >>> s = Shard(2, 3)
    >>> list(s.take(range(10)))
    [1, 4, 7]
    >>> str(s), Shard.whole().is_whole
    ('2/3', True)
    """

    index: int = 1
    count: int = 1

    def __post_init__(self):
        if not (1 <= self.index <= self.count):
            raise MLMProbError(f"shard {self.index}/{self.count}: need 1 <= I <= N")

    @classmethod
    def whole(cls) -> Shard:
        return cls(1, 1)

    @property
    def is_whole(self) -> bool:
        return self.count == 1

    def owns(self, k: int) -> bool:
        """Whether input record ``k`` (0-based) belongs to this shard."""
        return k % self.count == self.index - 1

    def size(self, n: int) -> int:
        """How many of ``n`` records (0 .. n-1) this shard owns.

        >>> Shard(2, 3).size(10), Shard(3, 3).size(2), Shard.whole().size(5)
        (3, 0, 5)
        """
        return len(range(self.index - 1, n, self.count))

    def take(self, items: Iterable[T]) -> Iterator[T]:
        """The items of this shard, in input order."""
        return iter(items) if self.is_whole else (item for k, item in enumerate(items) if self.owns(k))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str | None) -> Shard:
    """``"I/N"`` (1-based) -> :class:`Shard`; ``None`` -> the whole input.

    >>> parse_shard("3/8"), parse_shard(None)
    (Shard(index=3, count=8), Shard(index=1, count=1))
    >>> parse_shard("0/4")
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: --shard 0/4: need 1 <= I <= N (I is 1-based)
    """
    if text is None:
        return Shard.whole()
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not m:
        raise MLMProbError(f"--shard must look like I/N (e.g. 2/8), got {text!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if not (1 <= i <= n):
        raise MLMProbError(f"--shard {i}/{n}: need 1 <= I <= N (I is 1-based)")
    return Shard(i, n)
