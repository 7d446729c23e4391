"""The moves of the one MH engine (:mod:`mlmprob.mcmc.engine`): which sites a move changes and to which residues,
with the exact probability of the move and of its reverse.

A move from ``x`` changes up to ``k`` sites, drawn in an order (``order`` ``[B, k]``, positions into the changeable
sites), from the proposal expert's single-site rows (``rows`` ``[B, L, A]``, the logits of ``x`` with one site
masked; None: uniform over the allowed residues):

- ``plain``: ``k`` distinct sites uniformly (an ordered draw: the same probability both ways, so it cancels), then
  at each a residue from the site's row over its allowed residues at ``temperature`` (it may keep the current one).
  ``k = 1`` is the kernel of the first release, draw for draw.
- ``informed`` (locally balanced, Zanella 2020): ``k`` (site, residue) pairs drawn one after the other without
  repeating a site, ``(j, a)`` (``a`` allowed at ``j``, ``a ≠ x_j``) with weight ``sqrt(q_j(a) / q_j(x_j))``,
  ``q_j = softmax(rows_j / temperature)``. The reverse move replays the same sites in the same order from ``x'``.

:meth:`Moves.log_q` gives ``log q(to | from)`` of a move from the rows of ``from`` (the reverse: the rows of ``x'``,
which its energy reads anyway; the rows of ``x``: delayed acceptance's cheap estimate). Float64, ``-inf`` for a
move the proposal cannot make. ``free`` (bool ``[B, S]``, optional, the sampler's): each chain's changeable sites
among ``sites_of``; a chain with ``n < k`` changes ``n`` (``-1`` fills the rest of its ``order``), one with none
does not move. Without it every chain may change every site (the design kernel's moves, draw for draw)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

NEG = float("-inf")


def sample_from(log_probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One draw per row of ``log_probs`` ``[n, V]`` (float64 arithmetic), ``[n]``.

    >>> g = torch.Generator().manual_seed(0)
    >>> sample_from(torch.log(torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64)), g).tolist()
    [1, 0]
    """
    if log_probs.shape[0] == 0:
        return torch.zeros(0, dtype=torch.long)
    p = (log_probs.double() - log_probs.double().amax(-1, keepdim=True)).exp()
    return torch.multinomial(p, 1, generator=generator)[:, 0]


def site_log_probs(rows: torch.Tensor | None, allowed: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """The proposal at one site per chain, ``[n, A]`` float64 log-probabilities: ``softmax(rows / T)`` over the
    ``allowed`` residues (bool ``[n, A]``), ``-inf`` elsewhere; uniform over them when ``rows`` is None.

    >>> site_log_probs(torch.log(torch.tensor([[0.5, 0.3, 0.2]])), torch.tensor([[True, False, True]])).exp()
    tensor([[0.7143, 0.0000, 0.2857]], dtype=torch.float64)
    """
    x = torch.zeros(allowed.shape, dtype=torch.float64) if rows is None else rows.double() / temperature
    x = x.masked_fill(~allowed, NEG)
    return x - torch.logsumexp(x, -1, keepdim=True)


@dataclass(frozen=True)
class Moves:
    """The shape of a move: ``sites`` (``k``, residues changed at most), ``informed`` (locally balanced), the proposal
    rows' ``temperature``; ``sites_of`` the changeable sites ``[S]`` and ``allowed`` bool ``[L, A]``."""

    sites_of: torch.Tensor
    allowed: torch.Tensor
    sites: int = 1
    informed: bool = False
    temperature: float = 1.0

    @property
    def k(self) -> int:
        return min(self.sites, len(self.sites_of))

    def propose(self, X: torch.Tensor, rows: torch.Tensor | None, generator: torch.Generator, free=None):
        """``(X', order, log q(X' | X))`` for the chains ``X`` ``[B, L]``; ``order`` ``[B, k]`` indexes
        ``sites_of`` (``-1``: no site, a chain with fewer than ``k`` sites in ``free``)."""
        if self.informed:
            return self._informed(X, rows, free, generator)
        B, S = X.shape[0], len(self.sites_of)
        if free is None and self.k == 1:  # the first release's draws: a site, then a residue
            order = torch.randint(S, (B, 1), generator=generator)
        else:
            keys = torch.rand(B, S, generator=generator, dtype=torch.float64)
            order = (keys if free is None else keys.masked_fill(~free, 2.0)).argsort(-1)[:, : self.k]
            order = self._cut(order, free)
        b, j, logq = self._site_rows(order, rows)
        new = sample_from(logq, generator)
        Xp = X.clone()
        Xp[b, j] = new
        return Xp, order, self._per_chain(order, logq[torch.arange(len(new)), new])

    def _cut(self, order: torch.Tensor, free: torch.Tensor | None) -> torch.Tensor:
        """``order`` with ``-1`` in the slots past each chain's number of sites in ``free``."""
        if free is None:
            return order
        return order.masked_fill(torch.arange(order.shape[1]) >= free.sum(-1, keepdim=True), -1)

    def _site_rows(self, order: torch.Tensor, rows: torch.Tensor | None):
        """The chains ``b`` and sites ``j`` of the slots of ``order`` in use (row-major), and their proposals."""
        b, t = (order >= 0).nonzero(as_tuple=True)
        j = self.sites_of[order[b, t]]
        return b, j, site_log_probs(None if rows is None else rows[b, j], self.allowed[j], self.temperature)

    @staticmethod
    def _per_chain(order: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """``[B]``: the sum per chain of ``values`` (one per slot of ``order`` in use, row-major)."""
        out = torch.zeros(order.shape, dtype=torch.float64)
        out[order >= 0] = values
        return out.sum(-1)

    def _log_weights(self, X: torch.Tensor, rows: torch.Tensor | None, free: torch.Tensor | None) -> torch.Tensor:
        """``log w`` ``[B, S, A]`` of the pairs (changeable site, residue) from ``X`` (``-inf`` at the current residue,
        residues not allowed and sites not in ``free``)."""
        B = X.shape[0]
        j = self.sites_of
        allowed = self.allowed[j].expand(B, -1, -1)
        if free is not None:
            allowed = allowed & free[..., None]
        cur = X[:, j]
        if rows is None:
            lw = torch.zeros(allowed.shape, dtype=torch.float64)
        else:
            r = rows[:, j].double() / self.temperature
            lw = 0.5 * (r - r.gather(-1, cur[..., None]))
        lw = lw.masked_fill(~allowed, NEG)
        return lw.scatter(-1, cur[..., None], NEG)

    def _informed(self, X, rows, free, generator=None, order=None, Xp=None):
        """``(Xp, order, log q(Xp | X))`` of informed moves from ``X``: drawn from ``generator``, or the given
        ``order`` and ``Xp`` (then NaN where no such move exists)."""
        lw = self._log_weights(X, rows, free)
        B, S, A = lw.shape
        draw = order is None
        if draw:
            Xp, order = X.clone(), self._cut(torch.zeros(B, self.k, dtype=torch.long), free)
        assert Xp is not None and order is not None
        out = torch.zeros(B, dtype=torch.float64)
        for t in range(order.shape[1]):
            b = (order[:, t] >= 0).nonzero(as_tuple=True)[0]  # every chain without ``free``
            flat = lw[b].reshape(len(b), S * A)
            lp = flat - torch.logsumexp(flat, -1, keepdim=True)  # a changeable site always has a pair left
            if draw:
                pick = sample_from(lp, generator)
                order[b, t], Xp[b, self.sites_of[pick // A]] = pick // A, pick % A
            else:
                pick = order[b, t] * A + Xp[b, self.sites_of[order[b, t]]]
            out[b] += lp[torch.arange(len(b)), pick]
            lw[b, order[b, t]] = NEG
        return Xp, order, out

    def log_q(self, X, Xp, order, rows: torch.Tensor | None, free: torch.Tensor | None = None) -> torch.Tensor:
        """``log q(Xp | X)`` ``[B]`` of the move that changes the sites ``order`` of ``X`` to those of ``Xp``, read
        from ``rows`` (the rows of ``X``, or an estimate of them)."""
        if not self.informed:
            bb, j, logq = self._site_rows(order, rows)
            return self._per_chain(order, logq[torch.arange(len(j)), Xp[bb, j]])
        return torch.nan_to_num(self._informed(X, rows, free, order=order, Xp=Xp)[2], nan=NEG)

    def own_rows_change(self, X, Xp, order, rows: torch.Tensor) -> torch.Tensor:
        """``Σ_j rows_j(Xp_j) - rows_j(X_j)`` over the sites of the move ``[B]`` (float64), read from the rows of
        ``X`` (logit differences at one row are log-probability differences): delayed acceptance's estimate of
        ``-(E(Xp) - E(X))``."""
        B = X.shape[0]
        bb = torch.arange(B).repeat_interleave(order.shape[1])
        j = self.sites_of[order].reshape(-1)
        r = rows[bb, j].double()
        d = r.gather(-1, Xp[bb, j][:, None])[:, 0] - r.gather(-1, X[bb, j][:, None])[:, 0]
        d = torch.where(Xp[bb, j] == X[bb, j], torch.zeros_like(d), d)
        return d.view(B, order.shape[1]).sum(-1)
