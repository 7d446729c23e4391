"""Design's kernel: the one MH engine (:mod:`mlmprob.mcmc.engine`) on a design target
(:class:`~mlmprob.designing.terms.Target`); ``swap_step`` is replica exchange's move between adjacent temperatures.

One step per chain: a position ``i`` among those with more than one allowed residue, a residue from the proposal
expert's conditional at ``i`` renormalised over the residues allowed there (or uniform), and the exact Hastings
ratio (``x`` and ``x'`` agree outside ``i``, so the reverse proposal is read from the same row):

    log α = -(U(x') - U(x)) / τ + log q_i(x_i | x_-i) - log q_i(x'_i | x_-i),   U = Σ_k w_k E_k

so the chain's stationary law is ``p ∝ exp(-U/τ) 1[C]`` exactly."""

from __future__ import annotations

from ..errors import MLMProbError
from ..mcmc.engine import Kernel, MHInfo, MHState, log_acceptance, swap_log_acceptance, swap_step  # noqa: F401
from ..mcmc.engine import mh_kernel as engine
from ..mcmc.moves import Moves, site_log_probs  # noqa: F401 - re-exported with the engine's: the tests' kernel

DesignState = MHState
DesignInfo = MHInfo


def changeable_sites(allowed):
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
    """MH on ``target`` with moves of up to ``sites`` residues (:class:`~mlmprob.mcmc.moves.Moves`, ``informed`` or
    plain) from the expert term ``proposal`` (its index; None: uniform over the allowed residues), and with
    ``delayed`` delayed acceptance (:mod:`mlmprob.mcmc.engine`)."""
    moves = Moves(changeable_sites(target.allowed), target.allowed, sites, informed, proposal_temperature)
    unmasked = proposal is not None and target.terms[proposal].kind == "mutant_marginal"
    # the reverse move reads the rows of x' (one site of masked rows: x's own row, the same input)
    return engine(target, moves, proposal, informed or moves.k > 1 or unmasked, delayed)
