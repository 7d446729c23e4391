"""The settings of the chain-rule likelihood of records: :class:`LoglikSpec`, the spec ``mlmprob.loglik`` and
``likelihood.records.loglik_columns`` take, and the part of :class:`~mlmprob.scoring.ScoreSpec` that
``mlmprob score --likelihood loglik`` uses (``ScoreSpec.loglik_spec``). It lives here, below the scoring
module, so that the likelihood modules take it without importing scoring (which imports them).

>>> LoglikSpec(n_orders=3).settings()
{'order': 'random', 'n_orders': 3, 'per_order': False, 'seed': 0}
>>> LoglikSpec.of(LoglikSpec(n_orders=3), seed=2)
LoglikSpec(order='random', n_orders=3, per_order=False, seed=2)
>>> LoglikSpec(order="best")
Traceback (most recent call last):
...
mlmprob.errors.MLMProbError: order must be one of 'random', 'l2r', 'r2l', got 'best'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import MLMProbError
from ..settings import Spec, check_choice, check_count, check_int

LOGLIK_ORDER_KINDS = ("random", "l2r", "r2l")
LOGLIK_ORDERS = 8  # random orders per record (all of them when a record has at most this many)
LOGLIK_SETTINGS = ("order", "n_orders", "per_order", "seed")  # the fields, as ScoreSpec stores them


#: The most orders a record may be read along: each is a list of its positions in memory and a chain of model rows.
MAX_ORDERS = 100_000


def check_n_orders(n_orders, name: str = "n_orders") -> int:
    """``n_orders`` checked: a positive integer, at most :data:`MAX_ORDERS`.

    >>> check_n_orders(10 ** 9)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: n_orders must be at most 100,000 (each order is kept in memory and read with its own
    model rows), got 1000000000
    """
    return check_count(name, n_orders, MAX_ORDERS, "each order is kept in memory and read with its own model rows")


@dataclass(frozen=True)
class LoglikSpec(Spec):
    """The chain-rule likelihood's settings: ``n_orders`` orders of kind ``order`` (``"random"``: drawn, or all
    of a record's orders when it has at most ``n_orders``; ``"l2r"``, ``"r2l"``: the one order; ``loglik`` also
    takes explicit orders of the scored positions, checked against its input), ``seed``: of a
    record's random orders (``loglik_columns`` seeds each record by ``seed`` and its sequence; ``loglik`` seeds
    a batch's generator by it when none is given), ``per_order``: ``loglik_columns`` also lists the value of
    every order."""

    hint = " (a ScoreSpec's is spec.loglik_spec)"
    order: Any = "random"  # a kind, or (loglik) explicit orders: [n], [K, n] or [B, K, n] positions
    n_orders: int = LOGLIK_ORDERS
    per_order: bool = False
    seed: int = 0

    def __post_init__(self):
        if isinstance(self.order, str) or self.order is None or isinstance(self.order, (bool, int, float)):
            check_choice("order", self.order, LOGLIK_ORDER_KINDS)
        elif isinstance(self.order, list):  # kept hashable, as every spec
            try:
                object.__setattr__(self, "order", _tuples(self.order))
            except TypeError:
                raise MLMProbError(
                    f"order must be one of {LOGLIK_ORDER_KINDS} or orders of the scored positions, got {self.order!r}"
                ) from None
        check_n_orders(self.n_orders)
        check_int("seed", self.seed, 0, "a non-negative integer")


def _tuples(x):
    """Nested lists as nested tuples."""
    return tuple(_tuples(v) if isinstance(v, (list, tuple)) else v for v in x)
