"""``sample(method="mh")``'s target for the MH engine (:mod:`mlmprob.mcmc.engine`), :class:`TokenTarget`, and its
sweep's block proposals, :class:`BlockProposal` (the reverse move reads the very same rows as the forward one).
"""

from __future__ import annotations

import torch

from ..energies import energies_from_logits
from .forward import site_logits
from .proposals import proposal_log_probs, sample_from


class TokenTarget:
    """``p(x) ∝ exp(-E(x) / τ)``, ``E`` ``mlm``'s ``energy`` (``"local"`` or ``"raw"``) over the ``scored`` positions
    ``[B, L]``; reading ``x'`` reuses the row of ``rows`` (of the state's ``X``) at the one site where it differs.
    ``model_rows``: rows read."""

    experts = (0, 1)
    terms = ("local", "raw")

    def __init__(self, mlm, energy: str, scored: torch.Tensor, X=None, rows=None):
        self.mlm, self.scored, self.X, self.rows = mlm, scored, X, rows
        self.index = 0 if energy == "local" else 1
        self.weights = torch.tensor([1.0, 0.0] if self.index == 0 else [0.0, 1.0], dtype=torch.float64)
        self.model_rows = 0

    def energies(self, X: torch.Tensor, rows_of=None, only=None, chains=None):
        """``([E_local, E_raw] [N, 2], the single-site logits of X at the scored positions [N, L, V])``."""
        if only is not None and not len(only):
            return torch.zeros(len(X), 2, dtype=torch.float64), None
        scored = self.scored if chains is None else self.scored[chains]
        reuse = torch.zeros_like(scored)
        if chains is not None and self.X is not None:
            diff = X != self.X[chains]
            reuse = diff & (diff.sum(-1) == 1)[:, None] & scored
        logits, n = site_logits(self.mlm, X, scored & ~reuse)
        if reuse.any():
            logits[reuse] = self.rows[chains][reuse].to(logits.dtype)
        self.model_rows += n
        e_local, e_raw = energies_from_logits(logits, X, scored)
        return torch.stack([e_local, e_raw], -1), logits

    def total(self, E: torch.Tensor, only=None) -> torch.Tensor:
        if only is not None and not len(only):
            return torch.zeros(len(E), dtype=torch.float64)
        return E[:, self.index]

    def in_c(self, X: torch.Tensor) -> torch.Tensor:
        return torch.ones(len(X), dtype=torch.bool)


class BlockProposal:
    """The proposal of the blocks ``rows, cols`` (``block.nonzero()``), tokens drawn from ``logits_rows`` ``[n, V]``
    over ``allowed`` under ``config``; its ``order`` is the reverse move's log-probability per chain."""

    def __init__(self, logits_rows, rows, cols, allowed, config):
        self.logits_rows, self.rows, self.cols, self.allowed, self.config = logits_rows, rows, cols, allowed, config

    def propose(self, X, rows, generator, free=None):
        prop, fwd, rev = propose_block(self.logits_rows, self.rows, X, self.cols, self.allowed, self.config, generator)
        return prop, rev, fwd

    @staticmethod
    def log_q(X, Xp, order, rows, free=None):
        return order


def propose_block(logits_rows, rows, ids, cols, allowed, proposal, generator):
    """Draw the tokens of the blocks ``rows, cols`` from ``logits_rows``; return (proposal ids, log q(x'|x) [B],
    log q(x|x') [B])."""
    B = ids.shape[0]
    logq = proposal_log_probs(logits_rows, allowed, proposal)
    new = sample_from(logq, generator)
    old = ids[rows, cols]
    fwd = torch.zeros(B, dtype=torch.float64).index_add_(0, rows, logq.gather(1, new[:, None])[:, 0])
    rev = torch.zeros(B, dtype=torch.float64).index_add_(0, rows, logq.gather(1, old[:, None])[:, 0])
    prop = ids.clone()
    prop[rows, cols] = new
    return prop, fwd, rev
