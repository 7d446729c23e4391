"""Exact chain-rule distributions of one MLM on a small synthetic language (every sequence enumerated).

The conditionals ``q(x_t | x with M masked)`` are read once for every mask pattern ``M`` and every
content of the unmasked positions (``(V + 1)**T - V**T`` rows, read at their masked positions,
``read_logits``), so ``p_sigma`` of every order, the mixture over all ``T!`` orders, parallel decoding with
``k`` tokens per step, ``exp(-E_local)/Z`` and the stationary law of degenerate Gibbs (random-order
single-site sweeps, as ``mlmprob.sample(method="gibbs")``) are exact tables over the ``V**T`` sequences. The
tables are checked against ``mlmprob.loglik`` on a few sequences (``check_max_abs``).
"""

from __future__ import annotations

import itertools
import math

import torch

from mlmprob.batching import read_logits
from mlmprob.likelihood import loglik
from mlmprob.models.alphabet import allowed_ids

from .ground_truth_common import all_states, kl, state_index, tv


def conditional_tables(mlm, V: int, T: int, wrap, offset: int) -> dict[int, torch.Tensor]:
    """``{mask bits: [V**T, T] float64}``: ``tab[x, t] = log q(x_t | x with M masked)`` for ``t`` in ``M``
    (bit ``t`` set), normalised over the proposal alphabet. ``wrap`` turns symbols ``[B, T]`` into model
    ids (position ``t`` at ``t + shift``); symbol ``v`` is model id ``v + offset``."""
    states = all_states(V, T)
    ids = wrap(states)
    shift = (ids.shape[1] - T) // 2
    allowed = allowed_ids(mlm)
    rows, cols, pats, masked, base = [], [], [], [], 0
    for bits in range(1, 1 << T):
        M = [t for t in range(T) if bits >> t & 1]
        reps = (states[:, M] == 0).all(1).nonzero()[:, 0]  # one row per content of the unmasked part
        x = ids[reps].clone()
        x[:, [t + shift for t in M]] = mlm.mask_id
        masked.append(x)
        rows.append(reps.repeat_interleave(len(M)))
        cols.append(torch.tensor(M).repeat(len(reps)))
        pats.append(torch.full((len(reps) * len(M),), bits))
        base += len(reps)
    rows, cols, pats = torch.cat(rows), torch.cat(cols), torch.cat(pats)
    read_row = torch.arange(base).repeat_interleave(
        torch.cat([torch.full((len(x),), bin(b).count("1")) for b, x in enumerate(masked, 1)])
    )
    logits = read_logits(mlm, torch.cat(masked), read_row, cols + shift)
    x = logits.double().masked_fill(~allowed, float("-inf"))
    lq = (x - torch.logsumexp(x, -1, keepdim=True))[:, offset : offset + V]
    out = {}
    for bits in range(1, 1 << T):
        sel = (pats == bits).nonzero()[:, 0]
        M = [t for t in range(T) if bits >> t & 1]
        zeroed = states.clone()
        zeroed[:, M] = 0
        rep_index = torch.full((V**T,), -1, dtype=torch.long)
        reps = rows[sel].view(-1, len(M))[:, 0]
        rep_index[reps] = torch.arange(len(reps))
        k = rep_index[state_index(zeroed, V)]  # [N]: the content's row
        tab = torch.zeros(V**T, T, dtype=torch.float64)
        block = lq[sel].view(len(reps), len(M), V)
        for j, t in enumerate(M):
            tab[:, t] = block[k, j].gather(1, states[:, t : t + 1])[:, 0]
        out[bits] = tab
    return out


def order_log_probs(
    tables: dict[int, torch.Tensor], T: int, orders: list[tuple[int, ...]], tokens_per_step: int = 1
) -> torch.Tensor:
    """``[K, V**T]``: log-probability of every sequence under each order, ``tokens_per_step`` positions
    revealed per step (each from its own conditional given the earlier steps)."""
    out = []
    for o in orders:
        lp = 0.0
        for s in range(0, T, tokens_per_step):
            bits = sum(1 << t for t in o[s:])
            for t in o[s : s + tokens_per_step]:
                lp = lp + tables[bits][:, t]
        out.append(lp)
    return torch.stack(out)


def gibbs_stationary(
    tables: dict[int, torch.Tensor],
    V: int,
    T: int,
    start: torch.Tensor | None = None,
    tol: float = 1e-13,
    max_sweeps: int = 20000,
) -> tuple[torch.Tensor, dict]:
    """Log of the stationary law ``[V**T]`` of degenerate Gibbs: one epoch visits every position once in a
    uniformly random order and redraws it from ``q(x_t | x_\\t)``. The epoch kernel, the average over the
    ``T!`` orders of the products of the single-site kernels, is applied to a distribution by recursion over
    the visited subsets (``v_S = mean over t in S of v_{S - t} P_t``: ``2**T`` vectors, no ``K x K`` matrix),
    and iterated from ``start`` (log-probabilities; uniform if None) until the L1 change of one epoch is
    below ``tol``. Returns ``(log pi, {"sweeps", "residual"})`` (``residual``: the last L1 change)."""
    q = [tables[1 << t][:, t].exp().view([V] * T) for t in range(T)]
    p = torch.full([V] * T, V**-T, dtype=torch.float64) if start is None else start.exp().view([V] * T)
    p = p / p.sum()
    residual, n = float("inf"), 0
    while residual >= tol and n < max_sweeps:
        v = [p] + [None] * ((1 << T) - 1)
        for S in range(1, 1 << T):
            ts = [t for t in range(T) if S >> t & 1]
            v[S] = sum(v[S ^ (1 << t)].sum(t, keepdim=True) * q[t] for t in ts) / len(ts)
        new = v[-1] / v[-1].sum()
        residual, p, n = float((new - p).abs().sum()), new, n + 1
    return p.reshape(-1).log(), {"sweeps": n, "residual": residual}


def language_tables(mlm, lang, wrap=lambda x: x, offset: int = 0):
    """``(V, T, states, truth, tables, orders)``: every sequence of the language, its normalised true
    log-probabilities, the MLM's conditional tables for every mask pattern and the ``T!`` orders."""
    V, T = lang.vocab_size, lang.length
    states = all_states(V, T)
    truth = lang.log_prob(states).double()
    truth = truth - torch.logsumexp(truth, 0)
    return V, T, states, truth, conditional_tables(mlm, V, T, wrap, offset), list(itertools.permutations(range(T)))


def eval_chain(
    mlm, lang, *, wrap=lambda x: x, offset: int = 0, tokens_per_step=(2, 3), n_pairs: int = 200, seed: int = 0
) -> dict:
    """TV and KL(truth || q) for ``q`` = ``p_l2r``, ``p_r2l``, the mixture over all orders,
    ``exp(-E_local)/Z``, degenerate Gibbs's stationary law (``gibbs``, with its ``sweeps`` and
    ``residual``) and parallel decoding (random order, ``k`` per step); per-order TV (mean, min,
    max) and the spread between orders (mean KL and TV over ``n_pairs`` random pairs of orders)."""
    V, T, states, truth, tables, orders = language_tables(mlm, lang, wrap, offset)
    per = order_log_probs(tables, T, orders)  # [T!, N]
    log_k = math.log(len(orders))
    dists = {"l2r": per[0], "r2l": per[-1], "mixture": torch.logsumexp(per, 0) - log_k}
    e_local = sum(tables[1 << t][:, t] for t in range(T))
    dists["pll_target"] = e_local - torch.logsumexp(e_local, 0)
    dists["gibbs"], gibbs_conv = gibbs_stationary(tables, V, T, start=dists["mixture"])
    for k in tokens_per_step:
        par = order_log_probs(tables, T, orders, k)
        dists[f"parallel_k{k}"] = torch.logsumexp(par, 0) - log_k
    rec = {
        name: {"tv": tv(truth.exp(), q.exp()), "kl": kl(truth, q), "mass": float(q.exp().sum())}
        for name, q in dists.items()
    }
    rec["gibbs"].update(gibbs_conv)
    rec["parallel_vs_mixture"] = {
        f"k{k}": tv(dists["mixture"].exp(), dists[f"parallel_k{k}"].exp()) for k in tokens_per_step
    }
    tvs = torch.tensor([tv(truth.exp(), p.exp()) for p in per])
    rec["orders"] = {
        "n": len(orders),
        "tv_mean": float(tvs.mean()),
        "tv_min": float(tvs.min()),
        "tv_max": float(tvs.max()),
        "elbo_gap": float((truth.exp() * (dists["mixture"] - per.mean(0))).sum()),
    }
    g = torch.Generator().manual_seed(seed)
    pairs = torch.randint(len(orders), (n_pairs, 2), generator=g)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    rec["spread"] = {
        "kl_mean": sum(kl(per[a], per[b]) for a, b in pairs.tolist()) / len(pairs),
        "tv_mean": sum(tv(per[a].exp(), per[b].exp()) for a, b in pairs.tolist()) / len(pairs),
    }
    rec["check_max_abs"] = _check(mlm, states, per, orders, wrap, T, g)
    return rec


def _check(mlm, states, per, orders, wrap, T, g) -> float:
    """Largest |table - mlmprob.loglik| over a few sequences and orders (the tables' own test)."""
    pick = torch.randint(len(states), (4,), generator=g)
    ks = torch.randint(len(orders), (3,), generator=g).tolist()
    ids = wrap(states[pick])
    shift = (ids.shape[1] - T) // 2
    pos = torch.zeros(ids.shape, dtype=torch.bool)
    pos[:, shift : shift + T] = True
    r = loglik(mlm, ids, pos, order=[[t + shift for t in orders[k]] for k in ks])
    return float((r.per_order - per[ks][:, pick].T).abs().max())
