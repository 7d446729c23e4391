"""A literal implementation of Goyal et al.'s Algorithm 1 for tests and the benchmark: ``2T + 1`` forward rows per
single-site proposal; it draws as ``MetropolisHastings`` does, so on a model whose logits depend only on the row
both give identical chains.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..energies import energies_from_logits
from .forward import block_logits, site_logits
from .kernels import ChainState, Kernel, MetropolisHastings, StepInfo, advance
from .options import temperature_at
from .token_target import propose_block


@dataclass(frozen=True, eq=False)
class LiteralMH(MetropolisHastings):
    """Algorithm 1 of Goyal et al. (2022), no reuse: ``2T + 1`` rows per single-site proposal.

    Same settings and validation as ``MetropolisHastings``; ``init`` and ``step`` are its own.

    >>> import torch
    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.zeros(2, 2, 2))
    >>> k = LiteralMH(m)
    >>> s = k.init(torch.tensor([[0, 1, 1]]))
    >>> s, info = k.step(s, torch.Generator().manual_seed(0))
    >>> info.forward_rows      # 2 * 3 + 1
    7
    """

    init = Kernel.init  # no cached rows: Algorithm 1 computes every energy

    def _energy(self, ids, scored):
        logits, n = site_logits(self.mlm, ids, scored)
        e_local, e_raw = energies_from_logits(logits, ids, scored)
        return (e_local if self.energy == "local" else e_raw), n

    def step(self, state: ChainState, generator: torch.Generator) -> tuple[ChainState, StepInfo]:
        state, block = self._blocks(state, generator)
        active = block.any(-1)
        act = active[:, None]
        e_old, n_old = self._energy(state.ids, state.scored & act)  # line 6
        rows, cols = block.nonzero(as_tuple=True)
        logits_rows, n_prop = block_logits(self.mlm, state.ids, block)  # lines 7-9
        prop, log_q_fwd, log_q_rev = propose_block(
            logits_rows, rows, state.ids, cols, self._allowed, self.proposal, generator
        )
        e_new, n_new = self._energy(prop, state.scored & act)  # line 10
        assert callable(self.target_temperature)  # made a schedule by __post_init__
        tau = temperature_at(self.target_temperature, state.epoch)
        log_alpha = torch.where(
            active, -(e_new - e_old) / tau + log_q_rev - log_q_fwd, torch.zeros((), dtype=torch.float64)
        )  # line 11
        u = torch.rand(block.shape[0], generator=generator, dtype=torch.float64)
        accepted = active & (torch.log(u) < log_alpha)  # line 12
        changed = (prop != state.ids).any(-1)
        ids = torch.where(accepted[:, None], prop, state.ids)
        n = n_old + n_prop + n_new
        state, end = advance(state, ids=ids, forward_rows=state.forward_rows + n)
        return state, StepInfo(active, accepted, changed & accepted, log_alpha, n, end)
