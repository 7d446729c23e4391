"""The settings of scoring records: :class:`ScoreSpec` (``mlmprob score``'s flags are made from its fields) and
:class:`LoglikSpec` (the chain-rule likelihood's; ``ScoreSpec.loglik_spec``). Torch-free, below the scoring module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..argtypes import checked
from ..errors import MLMProbError
from ..fields import option
from ..settings import Spec, check_choice, check_count, check_int

LIKELIHOODS = ("pll", "loglik")
PLL_METHODS = ("exact", "one-pass")
LOGLIK_ORDER_KINDS = ("random", "l2r", "r2l")
LOGLIK_ORDERS = 8  # random orders per record (all of them when a record has at most this many)
LOGLIK_SETTINGS = ("order", "n_orders", "per_order", "seed")  # the fields, as ScoreSpec stores them
MAX_ORDERS = 100_000  # the most orders a record may be read along (each is kept in memory, with its model rows)


def check_n_orders(n_orders, name: str = "n_orders") -> int:
    """``n_orders`` checked: a positive integer, at most :data:`MAX_ORDERS`."""
    return check_count(name, n_orders, MAX_ORDERS, "each order is kept in memory and read with its own model rows")


def check_orders_seed(seed, name: str = "seed") -> int:
    """The seed of records' random orders: a non-negative integer (each record's generator hashes it with the
    record's sequence, so any size does)."""
    return check_int(name, seed, 0, "a non-negative integer")


@dataclass(frozen=True)
class LoglikSpec(Spec):
    """The chain-rule likelihood's settings: ``n_orders`` orders of kind ``order`` (``"random"``: drawn, or all of a
    record's orders when it has at most ``n_orders``; ``"l2r"``, ``"r2l"``: the one order; ``loglik`` also takes
    explicit orders of the scored positions), ``seed`` of the random orders (``loglik_columns`` seeds each record by
    it and its sequence; ``loglik`` a batch's generator when none is given), ``per_order``: ``loglik_columns`` also
    lists every order's value."""

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
        check_orders_seed(self.seed)


def _tuples(x):
    """Nested lists as nested tuples."""
    return tuple(_tuples(v) if isinstance(v, (list, tuple)) else v for v in x)


@dataclass(frozen=True)
class ScoreSpec(Spec):
    """The settings of a scoring run (``mlmprob score``'s flags are made from these fields; ``--orders`` sets
    ``n_orders``).

    ``whole_word``: the whole-word l2r PLL; ``per_token``: also per-token lists; ``likelihood``: ``"pll"``, or
    ``"loglik"`` for also the chain-rule columns (:mod:`mlmprob.likelihood.records`) over ``n_orders`` orders of kind
    ``order`` seeded by ``seed`` (``per_order``: their values too; these four are :attr:`loglik_spec`); ``pll``:
    ``"exact"`` or ``"one-pass"`` (:mod:`mlmprob.onepass`, with the fitted ``correction`` file, None: the model's
    own). :meth:`recorded` (what a resumed run must match): ``whole_word``, ``per_token`` and, with the chain-rule
    likelihood, ``likelihood`` and its settings; the one-pass keys are the command's (their digest needs the model)."""

    whole_word: bool = option(False, "whole-word l2r PLL (Kauf & Ivanova 2023)", action="store_true")
    per_token: bool = option(False, "also write per-token log-probabilities and raw logits", action="store_true")
    likelihood: str = option(
        "pll",
        "loglik: also the chain-rule log-likelihood over the proposal alphabet "
        "(mlmprob.loglik; columns loglik_mixture, loglik_elbo, loglik_per_token, ...)",
        choices=LIKELIHOODS,
        recorded="unless default",
    )
    order: str = option("random", "--likelihood loglik: order kind", choices=LOGLIK_ORDER_KINDS)
    n_orders: int = option(
        LOGLIK_ORDERS,
        "--likelihood loglik: random orders per record (all of them when a record has at most this many)",
        type=checked(int, check_n_orders),
        flag="--orders",
    )
    per_order: bool = option(False, "--likelihood loglik: also a list of per-order values", action="store_true")
    seed: int = option(0, "--likelihood loglik: seed of each record's orders", type=checked(int, check_orders_seed))
    # recorded by the command: the one-pass method's spelling, the correction's resolved path and digest
    pll: str = option(
        "exact",
        "exact: one masked copy per position; one-pass: an estimate from one unmasked pass and the model's fitted "
        "correction (mlmprob calibrate), ~L times faster; its rows say method one_pass",
        choices=PLL_METHODS,
        recorded=False,
    )
    correction: str | None = option(
        None,
        "with --pll one-pass: the correction file to use (from mlmprob calibrate --out) instead of the one shipped "
        "or beside the model",
        metavar="FILE",
        recorded=False,
    )

    def __post_init__(self):
        check_choice("likelihood", self.likelihood, LIKELIHOODS)
        _ = self.loglik_spec  # made once here: validates order, n_orders and seed
        check_choice("pll", self.pll, PLL_METHODS)
        if self.correction is not None and not self.one_pass:
            raise MLMProbError("--correction is the one-pass correction: use it with --pll one-pass")
        if self.one_pass and (self.per_token or self.whole_word):
            raise MLMProbError("--pll one-pass gives per-sequence scores only (no --per-token, no --whole-word)")
        if self.one_pass and self.loglik:
            raise MLMProbError("--pll one-pass and --likelihood loglik cannot be combined (the chain rule is exact)")

    @property
    def loglik(self) -> bool:
        return self.likelihood == "loglik"

    @property
    def loglik_spec(self) -> LoglikSpec:
        """The chain-rule settings (``order``, ``n_orders``, ``per_order``, ``seed``) as the likelihood API's spec."""
        return LoglikSpec(**{k: getattr(self, k) for k in LOGLIK_SETTINGS})

    @property
    def one_pass(self) -> bool:
        return self.pll == "one-pass"

    def uses(self, name: str) -> bool:
        return (name not in LOGLIK_SETTINGS or self.loglik) and (name != "correction" or self.one_pass)
