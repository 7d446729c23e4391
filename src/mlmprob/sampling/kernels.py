"""Sampling kernels over many chains at once: ``init(ids, free) -> state``, ``step(state, generator) -> (state,
StepInfo)``, a step one block per chain of the sweep drawn at the epoch's start. ``DegenerateGibbs`` (Wang & Cho 2019;
``k``-Gibbs of Li et al. 2024) accepts every proposal; ``MetropolisHastings`` (Goyal et al. 2022) is a step of the MH
engine (:mod:`mlmprob.mcmc.engine`) on :class:`~mlmprob.sampling.token_target.TokenTarget`, its state caching the
single-site conditionals at every scored position (its energies and single-site proposal rows), so a step forwards
only the proposal's other scored positions. With ``informed`` or ``sites > 1`` a step is one move of
:mod:`mlmprob.mcmc.moves` per chain drawn from the cached rows (``delayed``: screened by a first stage before ``x'``'s
rows are read); an epoch is ``ceil(n / sites)`` moves.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import torch

from ..energies import energies_from_logits
from ..errors import MLMProbError
from ..mcmc.engine import MHState, as_taus, mh_kernel, swap_step
from ..mcmc.moves import Moves
from ..models.protocol import MaskedLM
from ..positions import TOKENS, default_mask
from ..settings import check_ladder
from .forward import block_logits, site_logits
from .options import ProposalConfig, ScheduleLike, as_schedule, block_size_at, check_moves, temperature_at
from .proposals import allowed_ids
from .registry import ENERGIES
from .token_target import BlockProposal, TokenTarget, propose_block

ORDERS = ("random", "l2r")


@dataclass(frozen=True)
class ChainState:
    """State of ``B`` chains: ``ids`` ``[B, L]``; ``free`` / ``scored`` bool ``[B, L]`` (may change / in the energy);
    ``epoch`` (sweeps done), ``plan`` bool ``[S, B, L]`` (the sweep's blocks, None between sweeps) and ``cursor``. MH
    only: ``site_logits`` ``[B, L, V]`` (the single-site conditionals of ``ids`` at ``scored``), ``e_local``/``e_raw``
    ``[B]``. ``forward_rows``: rows forwarded so far.
    """

    ids: torch.Tensor
    free: torch.Tensor
    scored: torch.Tensor
    epoch: int = 0
    plan: torch.Tensor | None = None
    cursor: int = 0
    site_logits: torch.Tensor | None = None
    e_local: torch.Tensor | None = None
    e_raw: torch.Tensor | None = None
    forward_rows: int = 0


@dataclass(frozen=True)
class DrawState:
    """State of ``B`` chains of independent draws: ``ids`` ``[B, L]`` (masks still to reveal during an epoch),
    ``free`` / ``scored`` bool ``[B, L]``, ``epoch``; of the current or last epoch's draw ``log_prob`` ``[B]``
    (float64), ``rounds`` and ``calls`` ``[B]`` (its sequential rounds and model calls); ``forward_rows``."""

    ids: torch.Tensor
    free: torch.Tensor
    scored: torch.Tensor
    epoch: int = 0
    log_prob: torch.Tensor | None = None
    rounds: torch.Tensor | None = None
    calls: torch.Tensor | None = None
    forward_rows: int = 0


@dataclass(frozen=True)
class StepInfo:
    """What one step did, per chain ``[B]``: ``active`` (proposed), ``accepted``, ``novel`` (accepted and changed),
    ``log_alpha`` (0 for Gibbs); ``forward_rows``; ``end_of_epoch``; ``swaps``: replica exchange's swaps attempted and
    accepted per pair of adjacent rungs ``[2, R - 1]`` (None without)."""

    active: torch.Tensor
    accepted: torch.Tensor
    novel: torch.Tensor
    log_alpha: torch.Tensor
    forward_rows: int
    end_of_epoch: bool
    swaps: torch.Tensor | None = None

    @classmethod
    def drawn(cls, active: torch.Tensor, forward_rows: int, end: bool) -> StepInfo:
        """A step of independent draws: every ``active`` chain proposed, kept and changed (no accept step)."""
        zero = torch.zeros(len(active), dtype=torch.float64)
        return cls(active, active.clone(), active.clone(), zero, forward_rows, end)


def start_draw(state, mask_id: int, counters=("rounds", "calls"), **changes):
    """``state`` (a :class:`DrawState`) at the start of an epoch's draw: its free positions masked, ``log_prob`` and
    the per-chain ``counters`` zeroed, and ``changes``."""
    B = state.ids.shape[0]
    zeros = {name: torch.zeros(B, dtype=torch.long) for name in counters}
    log_prob = torch.zeros(B, dtype=torch.float64)
    return dataclasses.replace(
        state, ids=state.ids.masked_fill(state.free, mask_id), log_prob=log_prob, **zeros, **changes
    )


def sweep_plan(free: torch.Tensor, block_size: int, order: str, generator: torch.Generator) -> torch.Tensor:
    """Blocks of one sweep, bool ``[S, B, L]``: every free position of row ``b`` lies in exactly one
    block ``plan[s, b]``; blocks have ``block_size`` positions (the last may be smaller; rows with
    fewer free positions have empty blocks at the end).

    >>> g = torch.Generator().manual_seed(0)
    >>> sweep_plan(torch.tensor([[False, True, True, True]]), 2, "l2r", g).int().tolist()
    [[[0, 1, 1, 0]], [[0, 0, 0, 1]]]
    """
    if order not in ORDERS:
        raise MLMProbError(f"order must be one of {ORDERS}, got {order!r}")
    B, L = free.shape
    n = free.sum(-1)
    n_max = int(n.max()) if B else 0
    if n_max == 0:
        return torch.zeros(0, B, L, dtype=torch.bool)
    if order == "random":
        keys = torch.rand(B, L, generator=generator, dtype=torch.float64)
    else:
        keys = torch.arange(L, dtype=torch.float64).expand(B, L).clone()
    keys[~free] = float("inf")
    perm = keys.argsort(dim=-1, stable=True)  # perm[b, j]: j-th visited position
    k = max(1, min(block_size, n_max))
    S = -(-n_max // k)
    j = torch.arange(L).expand(B, L)
    valid = j < n[:, None]
    b = torch.arange(B)[:, None].expand(B, L)
    plan = torch.zeros(S, B, L, dtype=torch.bool)
    plan[(j // k)[valid], b[valid], perm[valid]] = True
    return plan


def move_plan(free: torch.Tensor, sites: int) -> torch.Tensor:
    """The epoch of MH's moves, bool ``[S, B, L]``: ``plan[s, b]`` the free positions of chain ``b`` while it has
    moves left at step ``s`` (``ceil(n_b / sites)`` moves, ``n_b`` its free positions), else none."""
    moves = (free.sum(-1) + sites - 1) // sites
    S = int(moves.max()) if len(moves) else 0
    return free[None] & (torch.arange(S)[:, None] < moves[None])[..., None]


class Kernel:
    """Base of the kernels: ``init(ids, free=None, epoch=0)`` makes the chains' first ``State``, ``free`` as given or
    every non-special token (:data:`mlmprob.positions.TOKENS`: masks stay clamped), ``scored`` the free positions or
    (``score_all``) every non-special one. ``_allowed`` (the ids a proposal may draw) is set by the ``__post_init__``
    of a kernel that draws (not a dataclass field: no change to the kernels' fields, repr and equality)."""

    State: ClassVar[type] = ChainState
    mlm: MaskedLM
    score_all: bool
    _allowed: torch.Tensor

    def init(self, ids: torch.Tensor, free: torch.Tensor | None = None, epoch: int = 0):
        free = default_mask(self.mlm, ids, TOKENS) if free is None else free
        scored = (default_mask(self.mlm, ids, TOKENS) | free) if self.score_all else free.clone()
        return self.State(ids, free, scored, epoch=epoch)


class _Sweeper(Kernel):
    """The MCMC kernels' checks and blocks: which block each chain proposes at this step."""

    block_size: ScheduleLike
    order: str

    def __post_init__(self):
        if self.order not in ORDERS:
            raise MLMProbError(f"order must be one of {ORDERS}, got {self.order!r}")
        if not isinstance(self.mlm.vocab_size, int) or self.mlm.vocab_size < 1:
            raise MLMProbError(f"model vocab_size must be a positive int, got {self.mlm.vocab_size!r}")
        object.__setattr__(self, "block_size", as_schedule(self.block_size, "block_size"))
        object.__setattr__(self, "_allowed", allowed_ids(self.mlm))

    def _blocks(self, state: ChainState, generator: torch.Generator) -> tuple[ChainState, torch.Tensor]:
        if state.plan is None:
            assert callable(self.block_size)  # made a schedule by __post_init__
            k = block_size_at(self.block_size, state.epoch)
            state = dataclasses.replace(state, plan=sweep_plan(state.free, k, self.order, generator), cursor=0)
        assert state.plan is not None
        if state.plan.shape[0] == 0:
            return state, torch.zeros_like(state.free)
        return state, state.plan[state.cursor]


def _ends_epoch(state) -> bool:
    """Whether the step just taken from ``state`` (its plan's block or move ``cursor``) is the epoch's last."""
    return state.plan is None or state.cursor + 1 >= state.plan.shape[0]


def advance(state, **changes):
    """``(state after the step at its plan's cursor with changes, whether that ended the epoch)``."""
    if _ends_epoch(state):
        return dataclasses.replace(state, plan=None, cursor=0, epoch=state.epoch + 1, **changes), True
    return dataclasses.replace(state, cursor=state.cursor + 1, **changes), False


def check_rungs(ids: torch.Tensor, free: torch.Tensor, scored: torch.Tensor, rungs: int) -> None:
    """Refuse chains that cannot be ``rungs`` rungs of a replica ladder (a swap exchanges their states): their number
    not a multiple of ``rungs``, or chains that differ from their partners in tokens outside the free positions or in
    which positions are free or scored."""
    B = free.shape[0]
    if B % rungs:
        raise MLMProbError(f"replica exchange runs the chains in {rungs} rungs: give a multiple of {rungs}, got {B}")
    fixed = ids.masked_fill(free, -1)
    for m in (free, scored, fixed):
        m = m.view(rungs, B // rungs, -1)
        if not bool((m == m[:1]).all()):
            raise MLMProbError(
                "replica exchange swaps the states of chain r*C + c across the rungs: those chains must have the same "
                "free and scored positions and the same tokens elsewhere (one input per batch: stream several inputs "
                "with a .jsonl --out)"
            )


@dataclass(frozen=True, eq=False)
class MetropolisHastings(_Sweeper):
    """MH with MLM (block) proposals, targeting ``exp(-E/tau)`` with ``E`` = ``E_local`` or ``E_raw``
    summed over the scored positions. ``block_size`` and ``target_temperature`` take schedules.
    ``informed`` / ``sites``: moves of :mod:`mlmprob.mcmc.moves` instead of the sweep's blocks, ``delayed`` their
    two-stage test (see the module's text). ``temperatures``: replica exchange, the ``B`` chains in rungs of
    ``C = B / R`` at these target temperatures (chain ``r * C + c`` at rung ``r``; the first ``C`` sample the target),
    adjacent rungs swapping states at the end of each epoch (:func:`mlmprob.mcmc.engine.swap_step`: even pairs after
    odd epochs, odd pairs after even ones); a swap pair must have the same free and scored positions.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
    >>> k = MetropolisHastings(m)
    >>> s = k.init(torch.tensor([[0, 1, 2], [2, 2, 2]]))
    >>> g = torch.Generator().manual_seed(1)
    >>> for _ in range(3):
    ...     s, info = k.step(s, g)
    >>> s.epoch, info.end_of_epoch
    (1, True)
    """

    mlm: MaskedLM
    energy: str = "local"
    block_size: ScheduleLike = 1
    proposal: ProposalConfig = ProposalConfig()
    target_temperature: ScheduleLike = 1.0
    order: str = "random"
    score_all: bool = False
    informed: bool = False
    sites: int = 1
    delayed: bool = False
    temperatures: tuple[float, ...] | None = None

    def __post_init__(self):
        if self.temperatures is not None:
            object.__setattr__(self, "temperatures", check_ladder(self.temperatures))
        super().__post_init__()
        object.__setattr__(self, "target_temperature", as_schedule(self.target_temperature, "target_temperature"))
        if self.energy not in ENERGIES:
            raise MLMProbError(f"energy must be one of {ENERGIES}, got {self.energy!r}")
        check_moves(self.informed, self.sites, self.block_size, self.proposal, self.order, self.delayed)

    def init(self, ids: torch.Tensor, free: torch.Tensor | None = None, epoch: int = 0) -> ChainState:
        """Initial state; computes the single-site conditionals of ``ids`` (one copy per scored
        position), the only time the current state's energy is computed."""
        state = super().init(ids, free, epoch)
        if self.temperatures is not None:
            check_rungs(ids, state.free, state.scored, len(self.temperatures))
        logits, n = site_logits(self.mlm, ids, state.scored)
        e_local, e_raw = energies_from_logits(logits, ids, state.scored)
        return dataclasses.replace(state, site_logits=logits, e_local=e_local, e_raw=e_raw, forward_rows=n)

    def step(self, state: ChainState, generator: torch.Generator) -> tuple[ChainState, StepInfo]:
        """One step of the engine (:mod:`mlmprob.mcmc.engine`): the sweep's next block of each chain, or one move."""
        if self.informed or self.sites > 1:
            return self._move_step(state, generator)
        state, block = self._blocks(state, generator)
        assert state.site_logits is not None  # set by init
        n_in_block = block.sum(-1)
        single = n_in_block == 1
        rows, cols = block.nonzero(as_tuple=True)
        # proposal rows: cached single-site conditionals, or one forward pass with the block masked
        cached = single[rows]
        logits_rows = torch.empty(len(rows), self.mlm.vocab_size, dtype=state.site_logits.dtype)
        logits_rows[cached] = state.site_logits[rows[cached], cols[cached]]
        logits_rows[~cached], n_fwd = block_logits(self.mlm, state.ids, block & (n_in_block > 1)[:, None])
        proposal = BlockProposal(logits_rows, rows, cols, self._allowed, self.proposal)
        return self._engine_step(state, proposal, False, None, n_in_block > 0, n_fwd, generator, False)

    def _move_step(self, state: ChainState, generator: torch.Generator) -> tuple[ChainState, StepInfo]:
        """One move (:mod:`mlmprob.mcmc.moves`) per chain with moves left in this epoch, drawn from the cached rows."""
        if state.plan is None:
            state = dataclasses.replace(state, plan=move_plan(state.free, self.sites), cursor=0)
        assert state.plan is not None  # just set
        free = state.plan[state.cursor] if state.plan.shape[0] else torch.zeros_like(state.free)
        sites_of = state.free.any(0).nonzero(as_tuple=True)[0]
        allowed = self._allowed.expand(state.ids.shape[1], -1)
        moves = Moves(sites_of, allowed, self.sites, self.informed, self.proposal.temperature)
        free = free[:, sites_of]
        return self._engine_step(state, moves, True, free, free.any(-1), 0, generator, self.delayed)

    def _engine_step(self, state, proposal, rows_of_new, free, active, n, generator, delayed):
        """One engine step with ``proposal`` (the ``active`` chains; ``n`` rows read to propose): state and info."""
        assert state.site_logits is not None and state.e_local is not None and state.e_raw is not None  # set by init
        target = TokenTarget(self.mlm, self.energy, state.scored, state.ids, state.site_logits)
        E = torch.stack([state.e_local, state.e_raw], -1)
        mh = MHState(state.ids, E, target.total(E), torch.ones_like(active), state.site_logits, self._taus(state))
        mh, info = mh_kernel(target, proposal, target.index, rows_of_new, delayed).step(mh, generator, free)
        n += target.model_rows
        swaps = None
        if self.temperatures is not None and _ends_epoch(state):  # replica exchange at the end of each epoch
            mh, tried, took = swap_step(mh, len(self.temperatures), (state.epoch + 1) % 2, generator)
            swaps = torch.stack([tried, took])
        state, end = advance(
            state,
            ids=mh.X,
            site_logits=mh.rows,
            e_local=mh.E[:, 0],
            e_raw=mh.E[:, 1],
            forward_rows=state.forward_rows + n,
        )
        accepted = (active & ~info.changed) | info.accepted
        return state, StepInfo(active, accepted, info.accepted, info.log_alpha, n, end, swaps)

    def _taus(self, state: ChainState) -> torch.Tensor:
        """Each chain's target temperature ``[B]``: its rung's, or the schedule's at this epoch."""
        B = state.ids.shape[0]
        if self.temperatures is not None:
            return torch.tensor(self.temperatures, dtype=torch.float64).repeat_interleave(B // len(self.temperatures))
        assert callable(self.target_temperature)  # made a schedule by __post_init__
        return as_taus(temperature_at(self.target_temperature, state.epoch), B)


@dataclass(frozen=True, eq=False)
class DegenerateGibbs(_Sweeper):
    """Always-accept (block) Gibbs with the MLM conditionals as proposals (Wang & Cho 2019; the
    ``k``-Gibbs sampler of Li et al. 2024 with ``block_size=k``).

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
    >>> k = DegenerateGibbs(m, block_size=3)
    >>> s = k.init(torch.tensor([[0, 1, 2]]))
    >>> s, info = k.step(s, torch.Generator().manual_seed(1))
    >>> info.end_of_epoch, bool(info.accepted[0])
    (True, True)
    """

    mlm: MaskedLM
    block_size: ScheduleLike = 1
    proposal: ProposalConfig = ProposalConfig()
    order: str = "random"
    score_all: bool = False

    def step(self, state: ChainState, generator: torch.Generator) -> tuple[ChainState, StepInfo]:
        state, block = self._blocks(state, generator)
        active = block.any(-1)
        rows, cols = block.nonzero(as_tuple=True)
        logits_rows, n_fwd = block_logits(self.mlm, state.ids, block)
        prop, _, _ = propose_block(logits_rows, rows, state.ids, cols, self._allowed, self.proposal, generator)
        novel = (prop != state.ids).any(-1)
        state, end = advance(state, ids=prop, forward_rows=state.forward_rows + n_fwd)
        return state, StepInfo(active, active.clone(), novel, torch.zeros(len(active), dtype=torch.float64), n_fwd, end)
