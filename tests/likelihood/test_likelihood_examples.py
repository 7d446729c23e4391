"""Worked examples of mlmprob.likelihood's internal modules, kept here rather than in their docstrings (run as doctests
in the module's namespace by ``docexamples.check_examples``)."""

from __future__ import annotations

from docexamples import check_examples


def test_spec_module():
    check_examples(
        "mlmprob.likelihood.spec",
        """
        >>> LoglikSpec(n_orders=3).settings()
        {'order': 'random', 'n_orders': 3, 'per_order': False, 'seed': 0}
        >>> LoglikSpec.of(LoglikSpec(n_orders=3), seed=2)
        LoglikSpec(order='random', n_orders=3, per_order=False, seed=2)
        >>> LoglikSpec(order="best")
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: order must be one of 'random', 'l2r', 'r2l', got 'best'
        """,
    )


def test_spec_check_n_orders():
    check_examples(
        "mlmprob.likelihood.spec",
        """
        >>> check_n_orders(10 ** 9)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: n_orders must be at most 100,000 (each order is kept in memory and read with its own
        model rows), got 1000000000
        """,
    )


def test_records_record_generator():
    check_examples(
        "mlmprob.likelihood.records",
        """
        >>> a = record_generator(0, "ACD").initial_seed(); a == record_generator(0, "ACD").initial_seed() != \\
        ...     record_generator(1, "ACD").initial_seed()
        True
        """,
    )


def test_spec_score_spec_loglik_spec():
    check_examples(
        "mlmprob.likelihood.spec",
        """
        >>> ScoreSpec(likelihood="loglik", n_orders=3).loglik_spec
        LoglikSpec(order='random', n_orders=3, per_order=False, seed=0)
        """,
    )


def test_orders_count_orders():
    check_examples(
        "mlmprob.likelihood.orders",
        """
        >>> count_orders(3, 6), count_orders(4, 6)
        (6, None)
        """,
    )
