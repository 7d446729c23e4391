"""Goyal et al.'s Algorithm 1 written from the paper for the tests, independent of the package's kernels.

Nothing here imports ``mlmprob.sampling``: energies, proposal distributions (temperature, nucleus),
block plans and acceptance are recomputed from ``mlm.logits`` alone (MATH.md, "Metropolis-Hastings
with MLM proposals"). Two forms:

- ``literal_mh``: chains stepped exactly as Algorithm 1 says (``E(x)`` and ``E(x')`` recomputed at
  every proposal). It draws random numbers in the order the package documents for its kernels
  (epoch plan: one float64 uniform per position at the start of a random-order sweep; then per
  step one multinomial draw per block position, chains in order, positions ascending; then one
  float64 uniform per chain for the accept test), so on the same generator both must make the same
  decisions;
- ``epoch_kernel``: the exact transition matrix of one sweep over all ``V**T`` states, for
  distributional checks from any start.

Models: ``ExactMLM`` / ``LookupMLM`` (ids ``0..V-1``, mask ``V``, every position free and scored).
"""

from __future__ import annotations

import itertools
import math

import torch


def states(V: int, T: int) -> torch.Tensor:
    """All ``V**T`` sequences in base-``V`` order.

    >>> states(2, 2).tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    """
    return torch.tensor(list(itertools.product(range(V), repeat=T)), dtype=torch.long)


def state_index(V: int, x) -> int:
    """Row number of sequence ``x`` in ``states``.

    >>> state_index(3, [1, 0, 2])
    11
    """
    out = 0
    for v in x:
        out = out * V + int(v)
    return out


def _masked_logits(mlm, X: torch.Tensor, positions) -> torch.Tensor:
    Y = X.clone()
    Y[:, list(positions)] = mlm.mask_id
    return mlm.logits(Y).double()


def energies(mlm, X: torch.Tensor, kind: str = "local") -> torch.Tensor:
    """``E_local(x) = -sum_t log q_t(x_t | x_\\t)`` or ``E_raw(x) = -sum_t logit_t(x_t | x_\\t)`` of rows ``X``."""
    e = torch.zeros(len(X), dtype=torch.float64)
    for t in range(X.shape[1]):
        row = _masked_logits(mlm, X, [t])[:, t]
        if kind == "local":
            row = row.log_softmax(-1)
        e -= row.gather(1, X[:, t : t + 1])[:, 0]
    return e


def proposal(logits: torch.Tensor, temperature: float = 1.0, top_p: float = 1.0) -> torch.Tensor:
    """Log-probabilities ``[n, V]`` of ``softmax(logits / temperature)`` restricted to its nucleus: the
    fewest most probable tokens whose mass reaches ``top_p`` (ties: lower id first), renormalised.

    >>> p = proposal(torch.tensor([[0.5, 0.3, 0.2]], dtype=torch.float64).log(), top_p=0.7).exp()
    >>> [round(v, 6) for v in p[0].tolist()]       # nucleus {0, 1}: 0.5 + 0.3 >= 0.7
    [0.625, 0.375, 0.0]
    """
    lp = (logits.double() / temperature).log_softmax(-1)
    if top_p >= 1.0:
        return lp
    p, ids = lp.exp(), torch.arange(lp.shape[-1])
    # ahead[n, v, w]: token w comes before token v in the nucleus order of row n
    ahead = (p[:, None, :] > p[:, :, None]) | ((p[:, None, :] == p[:, :, None]) & (ids[None, :] < ids[:, None]))
    mass_before = (ahead * p[:, None, :]).sum(-1)
    out = lp.masked_fill(mass_before >= top_p - 1e-12, -math.inf)  # "reaches" up to float64 rounding
    return out - out.logsumexp(-1, keepdim=True)


def _blocks(order: list[int], k: int) -> list[list[int]]:
    return [sorted(order[s : s + k]) for s in range(0, len(order), k)]


def literal_mh(
    mlm,
    ids: torch.Tensor,
    steps: int,
    generator: torch.Generator,
    *,
    block_size=1,
    temperature: float = 1.0,
    top_p: float = 1.0,
    target_temperature: float = 1.0,
    energy: str = "local",
):
    """Run Algorithm 1 on every row of ``ids`` (random-order sweeps) for ``steps`` block proposals.

    Yields ``(ids, accepted, log_alpha)`` after each step (``log_alpha`` is 0 for a proposal equal
    to the current state, which is accepted). ``block_size``: an int or a callable of the epoch.
    """
    B, T = ids.shape
    x = ids.clone()
    epoch, plan, cursor = 0, None, 0
    for _ in range(steps):
        if plan is None:  # a new sweep: a random order per chain
            k = block_size(epoch) if callable(block_size) else block_size
            keys = torch.rand(B, T, generator=generator, dtype=torch.float64)
            plan = [_blocks(sorted(range(T), key=lambda t: (float(keys[b, t]), t)), k) for b in range(B)]
            cursor = 0
        block = [plan[b][cursor] for b in range(B)]
        e_old = energies(mlm, x, energy)  # line 6: E(x), from scratch
        masked = x.clone()
        for b in range(B):
            masked[b, block[b]] = mlm.mask_id
        logits = mlm.logits(masked).double()  # lines 7-9: mask the block, propose
        rows = [b for b in range(B) for _ in block[b]]
        cols = [t for b in range(B) for t in block[b]]
        q = proposal(logits[rows, cols], temperature, top_p)
        new = torch.multinomial(q.exp(), 1, generator=generator)[:, 0]
        prop = x.clone()
        log_fwd = torch.zeros(B, dtype=torch.float64)
        log_rev = torch.zeros(B, dtype=torch.float64)
        for j, (b, t) in enumerate(zip(rows, cols)):
            prop[b, t] = new[j]
            log_fwd[b] += q[j, new[j]]
            log_rev[b] += q[j, x[b, t]]
        e_new = energies(mlm, prop, energy)  # line 10: E(x'), from scratch
        changed = (prop != x).any(-1)
        log_alpha = torch.where(
            changed, -(e_new - e_old) / target_temperature + log_rev - log_fwd, torch.zeros((), dtype=torch.float64)
        )  # line 11
        u = torch.rand(B, generator=generator, dtype=torch.float64)
        accepted = ~changed | (torch.log(u) < log_alpha)  # line 12
        x = torch.where(accepted[:, None], prop, x)
        cursor += 1
        if cursor == len(plan[0]):
            plan, epoch = None, epoch + 1
        yield x.clone(), accepted, log_alpha


def block_kernel(
    mlm,
    X: torch.Tensor,
    E: torch.Tensor,
    tau: float,
    block,
    temperature: float = 1.0,
    top_p: float = 1.0,
    gibbs: bool = False,
) -> torch.Tensor:
    """Exact transition matrix ``[K, K]`` of one MH proposal on the positions ``block`` (``gibbs``:
    the same proposal always accepted, degenerate Gibbs; ``E`` and ``tau`` are then unused)."""
    V, K = mlm.vocab_size, len(X)
    logits = _masked_logits(mlm, X, block)
    q = [proposal(logits[:, t], temperature, top_p) for t in block]
    P = torch.zeros(K, K, dtype=torch.float64)
    for a in range(K):
        for vals in itertools.product(range(V), repeat=len(block)):
            fwd = sum(float(q[j][a, v]) for j, v in enumerate(vals))
            y = X[a].clone()
            y[list(block)] = torch.tensor(vals)
            b = state_index(V, y)
            if b == a or fwd == -math.inf:
                continue
            rev = sum(float(q[j][a, X[a, t]]) for j, t in enumerate(block))
            log_alpha = 0.0 if gibbs else -(float(E[b]) - float(E[a])) / tau + rev - fwd
            P[a, b] = math.exp(fwd) * min(1.0, math.exp(log_alpha))
        P[a, a] = 1.0 - P[a].sum()
    return P


def epoch_kernel(
    mlm,
    X: torch.Tensor,
    E: torch.Tensor,
    tau: float,
    k: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    gibbs: bool = False,
    cache: dict | None = None,
) -> torch.Tensor:
    """Exact transition matrix of one random-order sweep in blocks of ``k``: the average over the
    ``T!`` equally likely visiting orders of the product of the block kernels (kept in ``cache``,
    keyed by the block's sorted positions, when one is given)."""
    T, K = X.shape[1], len(X)
    cache = {} if cache is None else cache
    orders = list(itertools.permutations(range(T)))
    out = torch.zeros(K, K, dtype=torch.float64)
    for order in orders:
        M = torch.eye(K, dtype=torch.float64)
        for block in _blocks(list(order), k):
            key = tuple(block)
            if key not in cache:
                cache[key] = block_kernel(mlm, X, E, tau, block, temperature, top_p, gibbs)
            M = M @ cache[key]
        out += M / len(orders)
    return out


def sweep_blocks(T: int, k: int) -> list[list[list[int]]]:
    """The blocks of each of the ``T!`` equally likely random-order sweeps in blocks of ``k``.

    >>> sweep_blocks(2, 1)
    [[[0], [1]], [[1], [0]]]
    """
    return [_blocks(list(order), k) for order in itertools.permutations(range(T))]
