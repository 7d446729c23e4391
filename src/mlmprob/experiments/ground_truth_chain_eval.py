"""Exact chain-rule distributions of one MLM on a small synthetic language (every sequence enumerated).

The conditionals ``q(x_t | x with M masked)`` are read once for every mask pattern ``M`` and every
content of the unmasked positions (``(V + 1)**T - V**T`` rows, read at their masked positions,
``read_logits``), so ``p_sigma`` of every order, the mixture over all ``T!`` orders, parallel decoding with
``k`` tokens per step and ``exp(-E_local)/Z`` are exact tables over the ``V**T`` sequences. The
tables are checked against ``mlmprob.loglik`` on a few sequences (``check_max_abs``).
"""

from __future__ import annotations

import itertools
import math

import torch

from ..batching import DEFAULT_BATCH_TOKENS, read_logits
from ..likelihood import loglik
from ..models.alphabet import allowed_ids
from .ground_truth_common import all_states, kl, state_index, tv


def conditional_tables(mlm, V: int, T: int, wrap, offset: int, batch_tokens: int = DEFAULT_BATCH_TOKENS
                       ) -> dict[int, torch.Tensor]:
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
        reps = (states[:, M] == 0).all(1).nonzero()[:, 0]          # one row per content of the unmasked part
        x = ids[reps].clone()
        x[:, [t + shift for t in M]] = mlm.mask_id
        masked.append(x)
        rows.append(reps.repeat_interleave(len(M)))
        cols.append(torch.tensor(M).repeat(len(reps)))
        pats.append(torch.full((len(reps) * len(M),), bits))
        base += len(reps)
    rows, cols, pats = torch.cat(rows), torch.cat(cols), torch.cat(pats)
    read_row = torch.arange(base).repeat_interleave(torch.cat([torch.full((len(x),), bin(b).count("1"))
                                                              for b, x in enumerate(masked, 1)]))
    logits = read_logits(mlm, torch.cat(masked), read_row, cols + shift, batch_tokens=batch_tokens)
    x = logits.double().masked_fill(~allowed, float("-inf"))
    lq = (x - torch.logsumexp(x, -1, keepdim=True))[:, offset:offset + V]
    out = {}
    for bits in range(1, 1 << T):
        sel = (pats == bits).nonzero()[:, 0]
        M = [t for t in range(T) if bits >> t & 1]
        zeroed = states.clone()
        zeroed[:, M] = 0
        rep_index = torch.full((V ** T,), -1, dtype=torch.long)
        reps = rows[sel].view(-1, len(M))[:, 0]
        rep_index[reps] = torch.arange(len(reps))
        k = rep_index[state_index(zeroed, V)]                       # [N]: the content's row
        tab = torch.zeros(V ** T, T, dtype=torch.float64)
        block = lq[sel].view(len(reps), len(M), V)
        for j, t in enumerate(M):
            tab[:, t] = block[k, j].gather(1, states[:, t:t + 1])[:, 0]
        out[bits] = tab
    return out


def order_log_probs(tables: dict[int, torch.Tensor], T: int, orders: list[tuple[int, ...]],
                    tokens_per_step: int = 1) -> torch.Tensor:
    """``[K, V**T]``: log-probability of every sequence under each order, ``tokens_per_step`` positions
    revealed per step (each from its own conditional given the earlier steps)."""
    out = []
    for o in orders:
        lp = 0.0
        for s in range(0, T, tokens_per_step):
            bits = sum(1 << t for t in o[s:])
            for t in o[s:s + tokens_per_step]:
                lp = lp + tables[bits][:, t]
        out.append(lp)
    return torch.stack(out)


def eval_chain(mlm, lang, *, wrap=lambda x: x, offset: int = 0, tokens_per_step=(2, 3), n_pairs: int = 200,
               seed: int = 0, batch_tokens: int = DEFAULT_BATCH_TOKENS) -> dict:
    """TV and KL(truth || q) for ``q`` = ``p_l2r``, ``p_r2l``, the mixture over all orders,
    ``exp(-E_local)/Z`` and parallel decoding (random order, ``k`` per step); per-order TV (mean, min,
    max) and the spread between orders (mean KL and TV over ``n_pairs`` random pairs of orders)."""
    V, T = lang.vocab_size, lang.length
    states = all_states(V, T)
    truth = lang.log_prob(states).double()
    truth = truth - torch.logsumexp(truth, 0)
    tables = conditional_tables(mlm, V, T, wrap, offset, batch_tokens)
    orders = list(itertools.permutations(range(T)))
    per = order_log_probs(tables, T, orders)                          # [T!, N]
    log_k = math.log(len(orders))
    dists = {"l2r": per[0], "r2l": per[-1], "mixture": torch.logsumexp(per, 0) - log_k}
    e_local = sum(tables[1 << t][:, t] for t in range(T))
    dists["pll_target"] = e_local - torch.logsumexp(e_local, 0)
    for k in tokens_per_step:
        par = order_log_probs(tables, T, orders, k)
        dists[f"parallel_k{k}"] = torch.logsumexp(par, 0) - log_k
    rec = {name: {"tv": tv(truth.exp(), q.exp()), "kl": kl(truth, q), "mass": float(q.exp().sum())}
           for name, q in dists.items()}
    rec["parallel_vs_mixture"] = {f"k{k}": tv(dists["mixture"].exp(), dists[f"parallel_k{k}"].exp())
                                  for k in tokens_per_step}
    tvs = torch.tensor([tv(truth.exp(), p.exp()) for p in per])
    rec["orders"] = {"n": len(orders), "tv_mean": float(tvs.mean()), "tv_min": float(tvs.min()),
                     "tv_max": float(tvs.max()), "elbo_gap": float((truth.exp() * (dists["mixture"] - per.mean(0))).sum())}
    g = torch.Generator().manual_seed(seed)
    pairs = torch.randint(len(orders), (n_pairs, 2), generator=g)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    rec["spread"] = {"kl_mean": sum(kl(per[a], per[b]) for a, b in pairs.tolist()) / len(pairs),
                     "tv_mean": sum(tv(per[a].exp(), per[b].exp()) for a, b in pairs.tolist()) / len(pairs)}
    rec["check_max_abs"] = _check(mlm, states, per, orders, wrap, T, g)
    return rec


def _check(mlm, states, per, orders, wrap, T, g) -> float:
    """Largest |table - mlmprob.loglik| over a few sequences and orders (the tables' own test)."""
    pick = torch.randint(len(states), (4,), generator=g)
    ks = torch.randint(len(orders), (3,), generator=g).tolist()
    ids = wrap(states[pick])
    shift = (ids.shape[1] - T) // 2
    pos = torch.zeros(ids.shape, dtype=torch.bool)
    pos[:, shift:shift + T] = True
    r = loglik(mlm, ids, pos, order=[[t + shift for t in orders[k]] for k in ks])
    return float((r.per_order - per[ks][:, pick].T).abs().max())
