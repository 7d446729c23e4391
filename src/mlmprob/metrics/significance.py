"""The exact two-sided sign test of a paired comparison on its discordant pairs."""

from __future__ import annotations

import math

from ..errors import MLMProbError


def exact_sign_test(wins_a: int, wins_b: int) -> float:
    """Two-sided exact binomial test of ``wins_a`` against ``wins_b`` under p = 1/2 (1.0 when both are 0).

    >>> exact_sign_test(0, 0), exact_sign_test(5, 5), round(exact_sign_test(9, 1), 6)   # 2 * 11 / 1024
    (1.0, 1.0, 0.021484)
    """
    if wins_a < 0 or wins_b < 0:
        raise MLMProbError(f"win counts must be non-negative, got {wins_a} and {wins_b}")
    n = wins_a + wins_b
    if n == 0:
        return 1.0
    lo = min(wins_a, wins_b)
    tail = sum(math.comb(n, i) for i in range(lo + 1))
    return min(1.0, 2 * tail / 2**n)
