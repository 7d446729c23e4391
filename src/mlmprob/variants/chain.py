"""The ``chain`` variant score: the exact log-likelihood ratio of the mutated sites under the mixture of chain-rule
orders,

    chain = log mean_sigma p_sigma(m_S | w_\\S) - log mean_sigma p_sigma(w_S | w_\\S),

over all ``|S|!`` orders of the sites when at most ``n_orders``, else ``n_orders`` orders seeded by ``seed`` and the
sites alone (the same for ``m`` and ``w``). Each step is a ``RowTable`` request normalised over the whole vocabulary,
so rows are shared with the other methods; a single mutant's ``chain`` equals ``masked_marginals``. Not
``mlmprob.loglik`` (docs/guides/scoring.md, "Two chain-rule quantities")."""

from __future__ import annotations

import itertools

import torch

from ..likelihood.orders import count_orders
from ..likelihood.spec import check_n_orders
from ..runtime.seeds import seeded_generator
from .rows import RowTable
from .spec import CHAIN_ORDERS


def site_orders(sites: list[int], n_orders: int = CHAIN_ORDERS, seed: int = 0) -> list[list[int]]:
    """The orders of ``sites`` the score averages over."""
    n_orders = check_n_orders(n_orders)
    if count_orders(len(sites), n_orders) is not None:
        return [list(p) for p in itertools.permutations(sites)]
    g = seeded_generator(seed, "variant", sites)
    return [[sites[i] for i in torch.randperm(len(sites), generator=g).tolist()] for _ in range(n_orders)]


def chain_requests(table: RowTable, x: dict[int, int], orders: list[list[int]], mask: int) -> list[list[int]]:
    """Requests ``[K][k]``: the terms of ``log p_sigma(x_S | w_\\S)`` for each order ``sigma``."""
    return [
        [table.request([(s, x[s]) for s in o[:j]] + [(s, mask) for s in o[j:]], i, x[i]) for j, i in enumerate(o)]
        for o in orders
    ]


def plan_chain(table: RowTable, w: list[int], variants, mask: int, n_orders: int, seed: int):
    """Per variant, the mutant's and the wild type's requests (``[K][k]`` each)."""
    plan = []
    for v in variants:
        orders, wild = site_orders([p for p, _ in v], n_orders, seed), {p: w[p] for p, _ in v}
        plan.append((chain_requests(table, dict(v), orders, mask), chain_requests(table, wild, orders, mask)))
    return plan


def chain_scores(values: torch.Tensor, plan) -> torch.Tensor:
    """``chain`` of every variant from the computed terms ``values``."""
    out = torch.empty(len(plan), dtype=torch.float64)
    for n, (req_m, req_w) in enumerate(plan):
        lm = values[torch.tensor(req_m)].sum(-1)  # [K]: log p_sigma(m_S | w_\S)
        lw = values[torch.tensor(req_w)].sum(-1)
        out[n] = torch.logsumexp(lm, 0) - torch.logsumexp(lw, 0)  # the 1/K of both means cancels
    return out
