"""Exact laws of the design kernels on an enumerated space ``X`` (the sequences of ``C``, ``[S, L]``), built from the
kernels' own proposal and acceptance functions, vectorised (float64), and the sample-size tolerances of TV tests.

- :func:`transition_matrix`: the random-scan MH kernel ``[S, S]`` (a proposal leaving ``C`` is rejected);
- :func:`swap_acceptance` and :func:`swap_apply`: replica exchange's swap move on the law of a pair of rungs,
  held as an ``[S, S]`` matrix (cold rung's state, hot rung's state), without forming the ``[S², S²]`` matrix;
- :func:`tv_tolerance`: how far the empirical law of ``n`` independent draws may lie from their law.
"""

from __future__ import annotations

import copy as _copy
import math

import torch

from mlmprob.designing.kernels import changeable_sites, log_acceptance, site_log_probs, swap_log_acceptance


def neighbours(target, X: torch.Tensor) -> torch.Tensor:
    """``[S, L, A]``: the index in ``X`` of ``X[s]`` with residue ``i`` set to letter ``a`` (-1: outside ``C``)."""
    S, L = X.shape
    A = len(target.alphabet)
    radix = A ** torch.arange(L)
    lookup = torch.full((A**L,), -1, dtype=torch.long)
    lookup[(X * radix).sum(-1)] = torch.arange(S)
    code = (X * radix).sum(-1)  # [S]
    delta = (torch.arange(A)[None, None, :] - X[:, :, None]) * radix[None, :, None]  # [S, L, A]
    return lookup[code[:, None, None] + delta]


def mh_moves(
    target,
    X: torch.Tensor,
    proposal: int | None,
    *,
    hastings: bool = True,
    proposal_temperature: float = 1.0,
    rows: torch.Tensor | None = None,
    U: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    """The moves of ``mh_kernel(target, proposal, proposal_temperature)`` that stay in ``C``: ``(from, to, log
    probability of proposing it, log q(x | x') - log q(x' | x), U(x') - U(x))``, one entry per (state, changeable
    site, letter) from the kernel's own :func:`site_log_probs` (``hastings=False``: the reverse proposal term
    replaced by the forward one, a wrong kernel). ``rows``/``U``: the proposal rows ``[S, L, A]`` and total
    energies, if known."""
    S, L = X.shape
    if U is None or (rows is None and proposal is not None):
        E, rows = target.energies(X, rows_of=proposal)
        U = target.total(E)
    sites = changeable_sites(target.allowed)
    nb = neighbours(target, X)
    out: list[list[torch.Tensor]] = [[], [], [], [], []]
    for i in sites.tolist():
        allowed = target.allowed[i].expand(S, -1)
        logq = site_log_probs(None if rows is None else rows[:, i], allowed, proposal_temperature)  # [S, A]
        cur = X[:, i]
        t = nb[:, i]  # [S, A]
        move = (t >= 0) & allowed & (torch.arange(logq.shape[1])[None] != cur[:, None])
        s = torch.arange(S)[:, None].expand_as(t)[move]
        fwd = logq[move]
        rev = logq.gather(1, cur[:, None]).expand_as(t)[move] if hastings else fwd
        for k, v in enumerate((s, t[move], fwd - math.log(len(sites)), rev - fwd, U[t[move]] - U[s])):
            out[k].append(v)
    return tuple(torch.cat(v) for v in out)


def matrix_at(moves: tuple[torch.Tensor, ...], tau: float, S: int) -> torch.Tensor:
    """The transition matrix ``[S, S]`` of :func:`mh_moves` at temperature ``tau``: each move proposed with its
    probability and accepted with ``min(1, exp(log_acceptance))``, the rest of each row staying put."""
    s, t, log_p, log_ratio, dU = moves
    zero = torch.zeros((), dtype=torch.float64)
    la = log_acceptance(zero, dU, torch.tensor(tau, dtype=torch.float64), log_ratio, zero)
    P = torch.zeros(S, S, dtype=torch.float64)
    P.index_put_((s, t), log_p.exp() * la.exp().clamp(max=1.0), accumulate=True)
    P[range(S), range(S)] += 1 - P.sum(1)
    return P


def transition_matrix(target, X: torch.Tensor, proposal: int | None, tau: float, **kw) -> torch.Tensor:
    """The exact transition matrix of ``mh_kernel(target, proposal, ...)`` at temperature ``tau`` on ``X``."""
    return matrix_at(mh_moves(target, X, proposal, **kw), tau, len(X))


def stationary(P: torch.Tensor) -> torch.Tensor:
    """The stationary law of an irreducible ``P`` (the left eigenvector of eigenvalue 1)."""
    w, v = torch.linalg.eig(P.T)
    k = int((w - 1).abs().argmin())
    p = v[:, k].real
    return p / p.sum()


def swap_acceptance(U: torch.Tensor, tau_cold: float, tau_hot: float) -> torch.Tensor:
    """``[S, S]``: the probability that the pair (cold rung at ``x``, hot rung at ``y``) swaps, from the kernel's
    :func:`swap_log_acceptance`."""
    return swap_log_acceptance(U[:, None], U[None, :], tau_cold, tau_hot).exp().clamp(max=1.0)


def swap_apply(joint: torch.Tensor, accept: torch.Tensor) -> torch.Tensor:
    """The law of the pair after one swap move from the law ``joint`` ``[S, S]``: ``(x, y)`` stays with
    probability ``1 - a(x, y)`` and becomes ``(y, x)`` with probability ``a(x, y)``."""
    return joint * (1 - accept) + (joint * accept).T


def tv(p: torch.Tensor, q: torch.Tensor) -> float:
    return 0.5 * float((p - q).abs().sum())


def tv_tolerance(n: int, law: torch.Tensor, bias: float = 0.0, level: float = 1e-6) -> float:
    """A bound on TV(empirical law of ``n`` independent draws from ``law``, the target) that fails with
    probability at most ``level``:

    - its mean: ``E|p̂_s - p_s| <= sqrt(p_s (1 - p_s) / n)`` (Jensen), so ``E[TV] <= 0.5 Σ_s sqrt(p_s (1 - p_s) / n)``
      (at most ``0.5 sqrt((S - 1) / n)``, Cauchy-Schwarz; far less for a concentrated law);
    - its spread: one draw moves TV by at most ``1/n``, so TV exceeds its mean by ``t`` with probability at most
      ``exp(-2 n t²)`` (McDiarmid): ``t = sqrt(log(1/level) / (2n))``;
    - plus ``bias``: the exact TV between the draws' law and the target (a finite run's distance to stationarity).
    """
    mean = 0.5 * float((law * (1 - law)).clamp(min=0).sqrt().sum()) / math.sqrt(n)
    return mean + math.sqrt(math.log(1 / level) / (2 * n)) + bias


def empirical(target, X: torch.Tensor, seqs) -> torch.Tensor:
    """The empirical law of the sequences ``seqs`` on ``X`` (each must lie in ``X``)."""
    index = {s: k for k, s in enumerate(target.decode(X))}
    counts = torch.zeros(len(X), dtype=torch.float64)
    for s in seqs:
        counts[index[s]] += 1
    return counts / counts.sum()


def point_law(target, X: torch.Tensor, seq: str) -> torch.Tensor:
    law = torch.zeros(len(X), dtype=torch.float64)
    law[target.decode(X).index(seq)] = 1
    return law


def tabulated(target, X: torch.Tensor, E: torch.Tensor, rows: dict):
    """A copy of ``target`` whose :meth:`energies` reads each term's energy and the proposal rows of the sequences
    of ``X`` from tables (``E`` ``[S, K]``, ``rows[k]`` ``[S, L, A]`` of expert ``k``) computed once through the
    models: long runs then cost no model calls. The kernels only read sequences of ``C`` (a proposal outside it
    is rejected unread), all of which lie in ``X``."""
    S, L = X.shape
    radix = len(target.alphabet) ** torch.arange(L)
    lookup = torch.full((len(target.alphabet) ** L,), -1, dtype=torch.long)
    lookup[(X * radix).sum(-1)] = torch.arange(S)
    copy = _copy.copy(target)

    def energies(Y: torch.Tensor, rows_of: int | None = None, chains=None):  # chains: the engine's, unused
        idx = lookup[(Y * radix).sum(-1)]
        assert bool((idx >= 0).all()), "a sequence outside C was read"
        return E[idx], (rows[rows_of][idx] if rows_of is not None else None)

    copy.energies = energies
    return copy


def run_law(start: torch.Tensor, P_of_step, steps: int) -> torch.Tensor:
    """The exact law after ``steps`` steps from the law ``start``, step ``t`` by the matrix ``P_of_step(t)``."""
    p = start
    for t in range(steps):
        p = p @ P_of_step(t)
    return p
