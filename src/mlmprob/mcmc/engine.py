"""The package's one Metropolis-Hastings engine, in the samplers' factory shape: ``mh_kernel(target, moves, ...)``
returns ``(init, step)`` with ``init(X, tau) -> MHState`` and ``step(state, generator, free=None) -> (MHState,
MHInfo)``; :func:`swap_step` is replica exchange's move between adjacent temperatures. ``design``'s kernel
(:func:`mlmprob.designing.kernels.mh_kernel`) is this engine on a design target, ``sample(method="mh")``'s
(:class:`~mlmprob.sampling.kernels.MetropolisHastings`) on one masked LM's energy over token ids
(:class:`~mlmprob.sampling.token_target.TokenTarget`).

A **target** is terms and constraints, ``p(x) ∝ exp(-U(x) / τ) · 1[x ∈ C]`` with ``U = Σ_k w_k E_k``:
``energies(X, rows_of=None, only=None, chains=None) -> (E [N, K], rows)`` (each term's energy; ``rows_of``, a term
index: that expert's single-site rows of ``X`` ``[N, L, A]``; ``only``: those terms alone, the others 0; ``chains``:
bool ``[B]``, the chains whose proposals ``X`` are), ``total(E, only=None) -> U``, ``in_c(X)``, ``no_worse(X, Xp,
mask)`` (chains outside ``C``: whether ``Xp`` adds no violation), ``experts`` (the terms that read a model) and
``weights``. A **proposal** is a :class:`~mlmprob.mcmc.moves.Moves`-like object: ``propose(X, rows, generator, free)
-> (X', order, log q(X' | X))`` and ``log_q(X, X', order, rows, free)``, read from the rows of the move's start.

One step makes one proposal per chain. A proposal outside ``C`` is rejected unread; the others are accepted with
``log α = -(U(x') - U(x)) / τ + log q(x | x') - log q(x' | x)``, the reverse read from the rows of ``x'``
(``rows_of_new``) or, when the reverse reads the same rows as the forward move, from those. A chain that starts
outside ``C`` follows the unconstrained ratio among moves that add no violation until it enters ``C``, which it
never leaves. ``delayed`` (Christen & Fox 2005): a first stage screens each proposal before its rows are read, from
the cheap terms exactly and the proposal expert's change estimated from the rows of ``x`` at the changed sites; the
second stage corrects by the first stage's acceptance of the reverse move, so the target stays invariant exactly.
Each step draws the same numbers from the generator whatever the states (the proposal's, then a uniform per chain,
then with ``delayed`` a second). Ratios are float64, in log space."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch


@dataclass(frozen=True)
class MHState:
    """``B`` chains: ``X`` ``[B, L]``, each term's energy ``E`` ``[B, K]``, the weighted total ``U``, ``inside`` (in
    ``C``), ``rows`` (the proposal expert's single-site logits at ``X`` ``[B, L, A]``; None: uniform proposals) and
    each chain's temperature ``tau`` (float64)."""

    X: torch.Tensor
    E: torch.Tensor
    U: torch.Tensor
    inside: torch.Tensor
    rows: torch.Tensor | None
    tau: torch.Tensor


@dataclass(frozen=True)
class MHInfo:
    """What one step did per chain ``[B]``: ``changed`` (the proposal differs from the state), ``left`` (it left
    ``C``: rejected unread), ``accepted`` (a changed proposal was accepted), ``log_alpha`` (``-inf`` when left; a
    screened move's first-stage ratio), ``screened`` (delayed acceptance's first stage rejected it unread),
    ``moved`` (residues an accepted move changed)."""

    changed: torch.Tensor
    left: torch.Tensor
    accepted: torch.Tensor
    log_alpha: torch.Tensor
    screened: torch.Tensor | None = None
    moved: torch.Tensor | None = None


class Kernel(NamedTuple):
    init: Callable[..., MHState]
    step: Callable[..., tuple[MHState, MHInfo]]


def log_acceptance(
    u_old: torch.Tensor, u_new: torch.Tensor, tau: torch.Tensor, log_q_rev: torch.Tensor, log_q_fwd: torch.Tensor
) -> torch.Tensor:
    """The Metropolis-Hastings log ratio ``-(U' - U) / τ + log q(x | x') - log q(x' | x)`` (float64)."""
    return -(u_new - u_old) / tau + log_q_rev - log_q_fwd


def mh_kernel(target, moves, proposal: int | None, rows_of_new: bool, delayed: bool = False) -> Kernel:
    """MH on ``target`` with the proposals of ``moves`` drawn from the rows of the expert term ``proposal`` (None: no
    rows), the reverse read from the rows of ``x'`` when ``rows_of_new``, ``delayed``: the two-stage test."""
    cheap = [k for k in range(len(target.terms)) if k not in target.experts]
    w_prop = 0.0 if proposal is None else float(target.weights[proposal])

    def init(X: torch.Tensor, tau) -> MHState:
        E, rows = target.energies(X, rows_of=proposal)
        return MHState(X, E, target.total(E), target.in_c(X), rows, as_taus(tau, len(X)))

    def first_stage(X, Xp, order, rows, U_cheap, U_cheap_p, tau, log_q_to, free) -> torch.Tensor:
        """The first stage's log ratio of the moves ``X -> Xp`` from ``rows`` (the rows of ``X``)."""
        est = -(U_cheap_p - U_cheap) / tau
        if proposal is not None:
            est = est + w_prop * moves.own_rows_change(X, Xp, order, rows) / tau
        return est + moves.log_q(Xp, X, order, rows, free) - log_q_to

    def step(state: MHState, generator: torch.Generator, free=None) -> tuple[MHState, MHInfo]:
        X = state.X
        B = X.shape[0]

        def at(mask):  # the chains' free sites, for the moves of the chains in ``mask``
            return None if free is None else free[mask]

        Xp, order, log_q_fwd = moves.propose(X, state.rows, generator, free)
        u = torch.rand(B, generator=generator, dtype=torch.float64)
        u1 = torch.rand(B, generator=generator, dtype=torch.float64) if delayed else None
        changed = (Xp != X).any(-1)
        inside = torch.zeros(B, dtype=torch.bool)
        inside[changed] = target.in_c(Xp[changed])
        outside = changed & ~state.inside
        read = changed & inside
        if outside.any():
            read |= outside & target.no_worse(X, Xp, outside)
        log_alpha = torch.full((B,), float("-inf"), dtype=torch.float64)
        log_alpha[~changed] = 0.0
        second, est, U_cp = read, None, None
        if delayed:
            assert u1 is not None
            E_cheap, _ = target.energies(Xp[read], only=cheap, chains=read)
            rows_r = None if state.rows is None else state.rows[read]
            U_c, U_cp = target.total(state.E[read], only=cheap), target.total(E_cheap, only=cheap)  # x', cheap terms
            tau_r = state.tau[read]
            est = first_stage(X[read], Xp[read], order[read], rows_r, U_c, U_cp, tau_r, log_q_fwd[read], at(read))
            second = read.clone()
            second[read] = torch.log(u1[read]) < est
            log_alpha[read] = torch.where(second[read], 0.0, est)  # a screened move's first-stage ratio
            E_new, rows_new = target.energies(Xp[second], rows_of=proposal, only=target.experts, chains=second)
            E_new = E_new + E_cheap[second[read]]
        else:
            E_new, rows_new = target.energies(Xp[second], rows_of=proposal, chains=second)
        U_new = target.total(E_new)
        back_rows = rows_new if rows_of_new else (None if state.rows is None else state.rows[second])
        log_q_rev = moves.log_q(Xp[second], X[second], order[second], back_rows, at(second))
        la = log_acceptance(state.U[second], U_new, state.tau[second], log_q_rev, log_q_fwd[second])
        if delayed:
            assert U_cp is not None and est is not None
            tau2, U_c = state.tau[second], target.total(state.E[second], only=cheap)
            est_back = first_stage(
                Xp[second], X[second], order[second], rows_new, U_cp[second[read]], U_c, tau2, log_q_rev, at(second)
            )
            la = la + est_back.clamp(max=0.0) - est[second[read]].clamp(max=0.0)
        log_alpha[second] = la
        accept = second.clone()
        accept[second] = torch.log(u[second]) < la
        state_new = _take(state, accept, Xp, E_new, U_new, inside, rows_new, second)
        moved = torch.where(accept, (Xp != X).sum(-1), 0)
        return state_new, MHInfo(changed, changed & ~inside, accept, log_alpha, read & ~second, moved)

    return Kernel(init, step)


def as_taus(tau, n: int) -> torch.Tensor:
    tau = torch.as_tensor(tau, dtype=torch.float64)
    return tau.expand(n).clone() if tau.dim() == 0 else tau.clone()


def _take(state: MHState, accept, Xp, E_new, U_new, inside, rows_new, read) -> MHState:
    """``state`` with the accepted proposals in (``E_new``, ``U_new``, ``rows_new`` are indexed by ``read``)."""
    if not accept.any():
        return state
    sel = accept[read]  # accepted among the read proposals
    X, E, U, ins = state.X.clone(), state.E.clone(), state.U.clone(), state.inside.clone()
    X[accept], E[accept], U[accept], ins[accept] = Xp[accept], E_new[sel], U_new[sel], inside[accept]
    rows = state.rows
    if rows is not None:
        rows = rows.clone()
        rows[accept] = rows_new[sel].to(rows.dtype)
    return dataclasses.replace(state, X=X, E=E, U=U, inside=ins, rows=rows)


def swap_log_acceptance(u_cold: torch.Tensor, u_hot: torch.Tensor, tau_cold, tau_hot) -> torch.Tensor:
    """Replica exchange's log acceptance of swapping the states of two chains at temperatures ``tau_cold`` and
    ``tau_hot``: ``(1/τ_cold - 1/τ_hot) (U_cold - U_hot)`` (float64)."""
    return (1.0 / tau_cold - 1.0 / tau_hot) * (u_cold - u_hot)


def swap_step(
    state: MHState, rungs: int, parity: int, generator: torch.Generator
) -> tuple[MHState, torch.Tensor, torch.Tensor]:
    """Swap moves between adjacent temperatures: the chains are ``rungs`` groups of ``C`` (chain ``r * C + c`` at
    rung ``r``); pairs ``(r, r + 1)`` with ``r % 2 == parity`` propose to exchange their states
    (:func:`swap_log_acceptance`). Returns the state and, per rung pair, the swaps attempted and accepted."""
    B = state.X.shape[0]
    C = B // rungs
    u = torch.rand(rungs - 1, C, generator=generator, dtype=torch.float64)
    attempted = torch.zeros(rungs - 1, dtype=torch.long)
    accepted = torch.zeros(rungs - 1, dtype=torch.long)
    perm = torch.arange(B)
    for r in range(parity, rungs - 1, 2):
        a, h = torch.arange(C) + r * C, torch.arange(C) + (r + 1) * C
        ok = torch.log(u[r]) < swap_log_acceptance(state.U[a], state.U[h], state.tau[a], state.tau[h])
        perm[a[ok]], perm[h[ok]] = h[ok], a[ok]
        attempted[r], accepted[r] = C, int(ok.sum())
    if bool((perm != torch.arange(B)).any()):
        rows = None if state.rows is None else state.rows[perm]
        state = dataclasses.replace(
            state, X=state.X[perm], E=state.E[perm], U=state.U[perm], inside=state.inside[perm], rows=rows
        )
    return state, attempted, accepted
