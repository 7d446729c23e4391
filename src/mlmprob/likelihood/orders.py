"""Orders of the scored positions for the chain rule: ``"l2r"``, ``"r2l"``, ``"random"``, or given. An order reveals
*units* one step at a time: one scored position, or with ``word_ids`` the scored pieces of one word (together, read
left to right). Orders are expanded to positions, ``[B, K, n]`` with ``-1`` padding."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..errors import MLMProbError
from .spec import check_n_orders

ORDER_KINDS = ("l2r", "r2l", "random")
MAX_ENUMERATED = 1 << 20  # orders of one row that "random" may enumerate exactly

OrderSpec = str | Sequence[Sequence[int]] | Sequence[int] | torch.Tensor


@dataclass(frozen=True)
class OrderPlan:
    """``orders`` long ``[B, K, n]`` (positions, ``-1`` padding), ``n_orders`` long ``[B]`` (valid
    orders of each row, the first ``n_orders[b]``), ``exact`` bool ``[B]`` (they are all the distinct
    orders of the row's units, each once)."""

    orders: torch.Tensor
    n_orders: torch.Tensor
    exact: torch.Tensor


def units_of(selected: torch.Tensor, word_row: torch.Tensor | None = None) -> list[list[int]]:
    """The units of one row, by first position: each scored position, or (``word_row``) the scored pieces of each
    word (``-1``: a unit of its own).

    >>> units_of(torch.tensor([False, True, True, True, True]), torch.tensor([-1, 0, 0, 1, -1]))
    [[1, 2], [3], [4]]
    """
    units: list[list[int]] = []
    groups: dict[int, list[int]] = {}
    for p in selected.nonzero()[:, 0].tolist():
        w = -1 if word_row is None else int(word_row[p])
        if w < 0:
            units.append([p])
        elif w in groups:
            groups[w].append(p)
        else:
            groups[w] = [p]
            units.append(groups[w])
    return units


def count_orders(n_units: int, limit: int) -> int | None:
    """``n_units!`` when it is at most ``limit``, else None."""
    return None if n_units > 20 or math.factorial(n_units) > limit else math.factorial(n_units)


def _explicit(order, B: int) -> list[list[list[int]]]:
    """Given orders as ``[B][K][n]`` lists: one order, ``K`` orders shared by the batch, or ``[B, K, n]``."""
    if isinstance(order, torch.Tensor):
        if order.dtype.is_floating_point or order.dtype == torch.bool or order.dim() not in (1, 2, 3):
            raise MLMProbError(
                f"orders must be integer positions [n], [K, n] or [B, K, n]; got dtype {order.dtype}, "
                f"shape {tuple(order.shape)}"
            )
        o = order.long().tolist()
        o = [[o]] * B if order.dim() == 1 else [o] * B if order.dim() == 2 else o
    else:
        try:
            seq = list(order)
            one = all(isinstance(p, int) for p in seq)
            o = [[[int(p) for p in seq]] if one else [[int(p) for p in s] for s in seq]] * B
        except (TypeError, ValueError):
            raise MLMProbError(
                f"order must be one of {ORDER_KINDS} or orders of the scored positions, got {order!r}"
            ) from None
    if len(o) != B:
        raise MLMProbError(f"orders were given for {len(o)} sequences, input_ids has {B}")
    if any(len(ob) == 0 for ob in o):
        raise MLMProbError("no order given")
    return o


def _as_unit_perm(o: list[int], units: list[list[int]], b: int, k: int) -> list[int]:
    expected = sorted(p for u in units for p in u)
    if sorted(o) != expected:
        raise MLMProbError(f"order {k} of sequence {b} is not a permutation of its scored positions {expected}: {o}")
    unit_of = {p: i for i, u in enumerate(units) for p in u}
    return list(dict.fromkeys(unit_of[p] for p in o))  # a word is revealed where the order first reaches it


def _row_perms(units, kind, n_orders, generator) -> tuple[list[list[int]], bool]:
    n = len(units)
    if kind in ("l2r", "r2l"):
        return [list(range(n))[:: 1 if kind == "l2r" else -1]], n <= 1
    if count_orders(n, min(n_orders, MAX_ENUMERATED)) is not None:
        return [list(p) for p in itertools.permutations(range(n))], True
    return [torch.randperm(n, generator=generator).tolist() for _ in range(n_orders)], False


def plan_orders(
    selected: torch.Tensor,
    word_ids: torch.Tensor | None,
    order: OrderSpec,
    n_orders: int = 1,
    generator: torch.Generator | None = None,
) -> OrderPlan:
    """The orders of every row of ``selected`` (bool ``[B, L]``). ``"random"`` uses all ``n!`` orders of a row's ``n``
    units when ``n! <= n_orders``, else draws ``n_orders`` uniform orders (row after row, from ``generator``).

    >>> p = plan_orders(torch.tensor([[True, True, False]]), None, "random", 6)
    >>> p.orders.tolist(), p.n_orders.tolist(), p.exact.tolist()
    ([[[0, 1], [1, 0]]], [2], [True])
    """
    n_orders = check_n_orders(n_orders)
    B, L = selected.shape
    if isinstance(order, str) and order not in ORDER_KINDS:
        raise MLMProbError(f"order must be one of {ORDER_KINDS} or explicit orders, got {order!r}")
    given = None if isinstance(order, str) else _explicit(order, B)
    rows, exact = [], []
    for b in range(B):
        units = units_of(selected[b], None if word_ids is None else word_ids[b])
        if given is None:
            perms, ex = _row_perms(units, order, n_orders, generator)
        else:
            perms, ex = [_as_unit_perm(o, units, b, k) for k, o in enumerate(given[b])], False
        rows.append([[p for u in perm for p in units[u]] for perm in perms])
        exact.append(ex)
    K = max(len(r) for r in rows)
    out = torch.full((B, K, max(len(o) for r in rows for o in r)), -1, dtype=torch.long)
    for b, r in enumerate(rows):
        for k, o in enumerate(r):
            out[b, k, : len(o)] = torch.tensor(o, dtype=torch.long)
    return OrderPlan(out, torch.tensor([len(r) for r in rows], dtype=torch.long), torch.tensor(exact))
