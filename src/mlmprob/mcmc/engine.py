"""Kernels on a design target (:class:`~mlmprob.designing.terms.Target`), in the factory shape of the samplers:
``mh_kernel(target, proposal, proposal_temperature)`` binds the fixed parts and returns ``(init, step)`` with
``init(X, tau) -> DesignState`` and ``step(state, generator) -> (DesignState, DesignInfo)``; ``swap_step``
is replica exchange's move between adjacent temperatures.

One MH step per chain: a position ``i`` drawn uniformly among those whose allowed set has more than one residue;
a residue drawn from the proposal expert's single-site conditional at ``i`` (the row of ``x`` with ``i``
masked), **renormalised over the residues allowed at** ``i`` (and tempered by ``proposal_temperature``), or
uniformly over them. ``x`` and ``x'`` agree outside ``i``, so the reverse proposal ``q(x | x')`` is read from
the same row and the Hastings ratio is exact:

    log α = -(U(x') - U(x)) / τ + log q_i(x_i | x_-i) - log q_i(x'_i | x_-i),   U = Σ_k w_k E_k

A proposal outside ``C`` is rejected (the target is 0 there) without reading any model. Each term of the random
scan leaves ``p ∝ exp(-U/τ) 1[C]`` invariant, so the chain's stationary law is the constrained target exactly.
A chain that starts outside ``C`` (``start_invalid``) follows the unconstrained ratio among moves that do not add
a violation until it enters ``C``, which it never leaves.

Randomness comes from the generator only, and each step draws the same numbers whatever the states (a site, a
residue and a uniform per chain). Ratios are float64, in log space.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

from ..errors import MLMProbError
from ..sampling.moves import Moves, site_log_probs  # noqa: F401 - site_log_probs: re-exported (tests read it here)


@dataclass(frozen=True)
class DesignState:
    """``B`` chains: ``X`` ``[B, L]`` (alphabet indices), ``E`` each term's energy ``[B, K]``, ``U`` the weighted
    total ``[B]``, ``inside`` (in ``C``) ``[B]``, ``rows`` the proposal expert's single-site logits at ``X``
    ``[B, L, A]`` (None for uniform proposals), ``tau`` each chain's temperature ``[B]`` (float64)."""

    X: torch.Tensor
    E: torch.Tensor
    U: torch.Tensor
    inside: torch.Tensor
    rows: torch.Tensor | None
    tau: torch.Tensor


@dataclass(frozen=True)
class DesignInfo:
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
    init: Callable[[torch.Tensor, torch.Tensor], DesignState]
    step: Callable[[DesignState, torch.Generator], tuple[DesignState, DesignInfo]]


def log_acceptance(
    u_old: torch.Tensor, u_new: torch.Tensor, tau: torch.Tensor, log_q_rev: torch.Tensor, log_q_fwd: torch.Tensor
) -> torch.Tensor:
    """The Metropolis-Hastings log ratio ``-(U' - U) / τ + log q(x | x') - log q(x' | x)`` (float64)."""
    return -(u_new - u_old) / tau + log_q_rev - log_q_fwd


def changeable_sites(allowed: torch.Tensor) -> torch.Tensor:
    """The positions whose allowed set has more than one residue (a proposal anywhere else cannot move)."""
    sites = (allowed.sum(-1) > 1).nonzero(as_tuple=True)[0]
    if len(sites) == 0:
        raise MLMProbError("no position may change: every position's allowed set is a single residue")
    return sites


def mh_kernel(
    target,
    proposal: int | None,
    proposal_temperature: float = 1.0,
    sites: int = 1,
    informed: bool = False,
    delayed: bool = False,
) -> Kernel:
    """MH on ``target`` with moves of up to ``sites`` residues (:class:`~mlmprob.sampling.moves.Moves`,
    ``informed`` or plain) from the expert term ``proposal`` (its index; None: uniform over the allowed residues),
    and with ``delayed`` a first stage that screens each proposal before its rows are read (Christen & Fox 2005):
    it reads the cheap terms (oracles, Hamming) exactly and estimates the proposal expert's change from the rows of
    ``x`` at the changed sites alone; the second stage, on the exact energies, corrects by the first stage's
    acceptance of the reverse move, so the target is left invariant exactly."""
    moves = Moves(changeable_sites(target.allowed), target.allowed, sites, informed, proposal_temperature)
    unmasked = proposal is not None and target.terms[proposal].kind == "mutant_marginal"
    # the reverse move reads the rows of x' (one site of masked rows: x's own row, the same input)
    rows_of_new = informed or moves.k > 1 or unmasked
    cheap = [k for k in range(len(target.terms)) if k not in target.experts]
    w_prop = 0.0 if proposal is None else float(target.weights[proposal])

    def init(X: torch.Tensor, tau: torch.Tensor) -> DesignState:
        E, rows = target.energies(X, rows_of=proposal)
        return DesignState(X, E, target.total(E), target.in_c(X), rows, _taus(tau, len(X)))

    def first_stage(X, Xp, order, rows, U_cheap, U_cheap_p, tau, log_q_to) -> torch.Tensor:
        """The first stage's log ratio of the moves ``X -> Xp`` read from ``rows`` (the rows of ``X``):
        the cheap terms exactly, the proposal expert by its own rows at the changed sites."""
        est = -(U_cheap_p - U_cheap) / tau
        if proposal is not None:
            est = est + w_prop * moves.own_rows_change(X, Xp, order, rows) / tau
        return est + moves.log_q(Xp, X, order, rows) - log_q_to

    def step(state: DesignState, generator: torch.Generator) -> tuple[DesignState, DesignInfo]:
        X = state.X
        B = X.shape[0]
        Xp, order, log_q_fwd = moves.propose(X, state.rows, generator)
        u = torch.rand(B, generator=generator, dtype=torch.float64)
        u1 = torch.rand(B, generator=generator, dtype=torch.float64) if delayed else None
        changed = (Xp != X).any(-1)
        inside = torch.zeros(B, dtype=torch.bool)
        inside[changed] = target.in_c(Xp[changed])
        read = changed & (inside | (~state.inside & _no_worse(target, X, Xp, changed & ~state.inside)))
        log_alpha = torch.full((B,), float("-inf"), dtype=torch.float64)
        log_alpha[~changed] = 0.0
        second, E_cheap, est, U_cp = read, None, None, None
        if delayed:
            assert u1 is not None
            E_cheap, _ = target.energies(Xp[read], only=cheap)
            rows_r = None if state.rows is None else state.rows[read]
            U_c, U_cp = target.total(state.E[read], only=cheap), target.total(E_cheap, only=cheap)  # x', cheap terms
            est = first_stage(X[read], Xp[read], order[read], rows_r, U_c, U_cp, state.tau[read], log_q_fwd[read])
            second = read.clone()
            second[read] = torch.log(u1[read]) < est
            log_alpha[read] = torch.where(second[read], 0.0, est)  # a screened move's first-stage ratio
        if delayed:
            assert E_cheap is not None
            E_new, rows_new = target.energies(Xp[second], rows_of=proposal, only=target.experts)
            E_new = E_new + E_cheap[second[read]]
        else:
            E_new, rows_new = target.energies(Xp[second], rows_of=proposal)
        U_new = target.total(E_new)
        back_rows = rows_new if rows_of_new else (None if state.rows is None else state.rows[second])
        log_q_rev = moves.log_q(Xp[second], X[second], order[second], back_rows)
        la = log_acceptance(state.U[second], U_new, state.tau[second], log_q_rev, log_q_fwd[second])
        if delayed:
            assert U_cp is not None and est is not None
            tau2, U_c = state.tau[second], target.total(state.E[second], only=cheap)
            est_back = first_stage(
                Xp[second], X[second], order[second], rows_new, U_cp[second[read]], U_c, tau2, log_q_rev
            )
            la = la + est_back.clamp(max=0.0) - est[second[read]].clamp(max=0.0)
        log_alpha[second] = la
        accept = second.clone()
        accept[second] = torch.log(u[second]) < la
        state_new = _take(state, accept, Xp, E_new, U_new, inside, rows_new, second)
        moved = torch.where(accept, (Xp != X).sum(-1), 0)
        return state_new, DesignInfo(changed, changed & ~inside, accept, log_alpha, read & ~second, moved)

    return Kernel(init, step)


def _taus(tau, n: int) -> torch.Tensor:
    tau = torch.as_tensor(tau, dtype=torch.float64)
    return tau.expand(n).clone() if tau.dim() == 0 else tau.clone()


def _no_worse(target, X: torch.Tensor, Xp: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Bool ``[B]``: at ``rows`` (chains outside ``C``), whether ``Xp`` has no more violations than ``X``."""
    out = torch.zeros(len(X), dtype=torch.bool)
    c = target.constraints
    for r in rows.nonzero(as_tuple=True)[0].tolist():
        old, new = target.decode(X[r : r + 1])[0], target.decode(Xp[r : r + 1])[0]
        out[r] = len(c.violations(new)) <= len(c.violations(old))
    return out


def _take(state: DesignState, accept, Xp, E_new, U_new, inside, rows_new, read) -> DesignState:
    """``state`` with the accepted proposals in (``E_new``, ``U_new``, ``rows_new`` are indexed by ``read``)."""
    if not accept.any():
        return state
    sel = accept[read]  # accepted among the read proposals
    X, E, U, ins = state.X.clone(), state.E.clone(), state.U.clone(), state.inside.clone()
    X[accept], E[accept], U[accept], ins[accept] = Xp[accept], E_new[sel], U_new[sel], inside[accept]
    rows = state.rows
    if rows is not None:
        rows = rows.clone()
        rows[accept] = rows_new[sel]
    return dataclasses.replace(state, X=X, E=E, U=U, inside=ins, rows=rows)


def swap_log_acceptance(u_cold: torch.Tensor, u_hot: torch.Tensor, tau_cold, tau_hot) -> torch.Tensor:
    """Replica exchange's log acceptance of swapping the states of two chains at temperatures ``tau_cold`` and
    ``tau_hot``: ``(1/τ_cold - 1/τ_hot) (U_cold - U_hot)`` (float64)."""
    return (1.0 / tau_cold - 1.0 / tau_hot) * (u_cold - u_hot)


def swap_step(
    state: DesignState, rungs: int, parity: int, generator: torch.Generator
) -> tuple[DesignState, torch.Tensor, torch.Tensor]:
    """Swap moves between adjacent temperatures: the chains are ``rungs`` groups of ``C`` (chain ``r * C + c`` at
    rung ``r``); pairs ``(r, r + 1)`` with ``r % 2 == parity`` each propose to exchange their states, accepted by
    the exact rule (:func:`swap_log_acceptance`). Returns the state and, per rung pair ``[rungs - 1]``, the
    swaps attempted and accepted."""
    B = state.X.shape[0]
    C = B // rungs
    u = torch.rand(rungs - 1, C, generator=generator, dtype=torch.float64)
    attempted = torch.zeros(rungs - 1, dtype=torch.long)
    accepted = torch.zeros(rungs - 1, dtype=torch.long)
    perm = torch.arange(B)
    for r in range(parity, rungs - 1, 2):
        a, h = torch.arange(C) + r * C, torch.arange(C) + (r + 1) * C
        la = swap_log_acceptance(state.U[a], state.U[h], state.tau[a], state.tau[h])
        ok = torch.log(u[r]) < la
        perm[a[ok]], perm[h[ok]] = h[ok], a[ok]
        attempted[r], accepted[r] = C, int(ok.sum())
    if bool((perm != torch.arange(B)).any()):
        rows = None if state.rows is None else state.rows[perm]
        state = dataclasses.replace(
            state, X=state.X[perm], E=state.E[perm], U=state.U[perm], inside=state.inside[perm], rows=rows
        )
    return state, attempted, accepted
