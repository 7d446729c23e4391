"""The proposals of the design kernels: which sites a move changes and to which residues, with the exact
probability of the move and of its reverse.

A move from ``x`` changes up to ``k`` sites, drawn in an order (``order`` ``[B, k]``, positions into the
changeable sites), from the single-site rows of the proposal expert (``rows`` ``[B, L, A]``, the logits of
``x`` with one site masked; None: uniform over the allowed residues):

- ``plain``: ``k`` distinct sites uniformly (an ordered draw: the same probability both ways, so it cancels),
  then at each a residue from the site's row renormalised over its allowed residues at ``temperature``
  (independently given ``x``; it may keep the current residue). ``k = 1`` is the kernel of the first
  release, draw for draw.
- ``informed`` (locally balanced, Zanella 2020): ``k`` (site, residue) pairs drawn one after the other without
  repeating a site, each pair ``(j, a)`` (``a`` allowed at ``j``, ``a ≠ x_j``) with weight
  ``sqrt(q_j(a) / q_j(x_j))``, ``q_j = softmax(rows_j / temperature)``: every move changes ``k`` residues, toward
  the residues the expert prefers. The reverse move replays the same sites in the same order from ``x'``.

:func:`log_q` gives ``log q(to | from)`` of a move given the rows of ``from``: the reverse probability is
``log_q(x', x, order, rows of x')``; the rows of ``x'`` are the ones its energy reads anyway. Given the rows of
``x`` instead it is the first stage's cheap estimate of delayed acceptance. Float64, ``-inf`` for a move the
proposal cannot make.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .proposals import sample_from

NEG = float("-inf")


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
    """The shape of a move: ``sites`` (``k``, residues changed per move at most), ``informed`` (locally balanced
    choice of the sites and residues), ``temperature`` (of the proposal rows); ``sites_of`` the changeable
    sites ``[S]`` and ``allowed`` bool ``[L, A]``."""

    sites_of: torch.Tensor
    allowed: torch.Tensor
    sites: int = 1
    informed: bool = False
    temperature: float = 1.0

    @property
    def k(self) -> int:
        return min(self.sites, len(self.sites_of))

    def propose(self, X: torch.Tensor, rows: torch.Tensor | None, generator: torch.Generator):
        """``(X', order, log q(X' | X))`` for the chains ``X`` ``[B, L]``; ``order`` ``[B, k]`` indexes
        ``sites_of``."""
        if self.informed:
            return self._propose_informed(X, rows, generator)
        B, S = X.shape[0], len(self.sites_of)
        if self.k == 1:  # the first release's draws: a site, then a residue
            order = torch.randint(S, (B, 1), generator=generator)
        else:
            order = torch.rand(B, S, generator=generator, dtype=torch.float64).argsort(-1)[:, : self.k]
        b = torch.arange(B).repeat_interleave(self.k)
        j = self.sites_of[order].reshape(-1)
        logq = site_log_probs(None if rows is None else rows[b, j], self.allowed[j], self.temperature)
        new = sample_from(logq, generator)
        Xp = X.clone()
        Xp[b, j] = new
        fwd = logq[torch.arange(len(new)), new].view(B, self.k).sum(-1)
        return Xp, order, fwd

    def _log_weights(self, X: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
        """``log w`` ``[B, S, A]`` of the pairs (changeable site, residue) from ``X``: ``-inf`` at the current residue
        and at residues not allowed."""
        B = X.shape[0]
        j = self.sites_of
        allowed = self.allowed[j].expand(B, -1, -1)
        cur = X[:, j]
        if rows is None:
            lw = torch.zeros(allowed.shape, dtype=torch.float64)
        else:
            r = rows[:, j].double() / self.temperature
            lw = 0.5 * (r - r.gather(-1, cur[..., None]))
        lw = lw.masked_fill(~allowed, NEG)
        return lw.scatter(-1, cur[..., None], NEG)

    def _propose_informed(self, X, rows, generator):
        B, S = X.shape[0], len(self.sites_of)
        lw = self._log_weights(X, rows)
        A = lw.shape[-1]
        Xp, fwd = X.clone(), torch.zeros(B, dtype=torch.float64)
        order = torch.zeros(B, self.k, dtype=torch.long)
        b = torch.arange(B)
        for t in range(self.k):
            flat = lw.reshape(B, S * A)
            lp = flat - torch.logsumexp(flat, -1, keepdim=True)  # a changeable site always has a pair left
            pick = sample_from(lp, generator)
            s, a = pick // A, pick % A
            fwd += lp[b, pick]
            order[:, t] = s
            Xp[b, self.sites_of[s]] = a
            lw[b, s] = NEG
        return Xp, order, fwd

    def log_q(self, X: torch.Tensor, Xp: torch.Tensor, order: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
        """``log q(Xp | X)`` ``[B]`` of the move that changes the sites ``order`` of ``X`` to those of ``Xp``, read
        from ``rows`` (the rows of ``X``, or an estimate of them)."""
        B = X.shape[0]
        b = torch.arange(B)
        if not self.informed:
            bb = b.repeat_interleave(order.shape[1])
            j = self.sites_of[order].reshape(-1)
            logq = site_log_probs(None if rows is None else rows[bb, j], self.allowed[j], self.temperature)
            return logq[torch.arange(len(j)), Xp[bb, j]].view(B, order.shape[1]).sum(-1)
        lw = self._log_weights(X, rows)
        S, A = lw.shape[1], lw.shape[2]
        out = torch.zeros(B, dtype=torch.float64)
        for t in range(order.shape[1]):
            s = order[:, t]
            flat = lw.reshape(B, S * A)
            a = Xp[b, self.sites_of[s]]
            out += flat[b, s * A + a] - torch.logsumexp(flat, -1)
            lw[b, s] = NEG
        return torch.nan_to_num(out, nan=NEG)

    def own_rows_change(
        self, X: torch.Tensor, Xp: torch.Tensor, order: torch.Tensor, rows: torch.Tensor
    ) -> torch.Tensor:
        """``Σ_j rows_j(Xp_j) - rows_j(X_j)`` over the sites of the move ``[B]`` (float64): the change of an
        expert's log-conditionals at the changed sites alone, read from the rows of ``X`` (logit differences at
        one row are log-probability differences): delayed acceptance's estimate of ``-(E(Xp) - E(X))``."""
        B = X.shape[0]
        bb = torch.arange(B).repeat_interleave(order.shape[1])
        j = self.sites_of[order].reshape(-1)
        r = rows[bb, j].double()
        d = r.gather(-1, Xp[bb, j][:, None])[:, 0] - r.gather(-1, X[bb, j][:, None])[:, 0]
        d = torch.where(Xp[bb, j] == X[bb, j], torch.zeros_like(d), d)
        return d.view(B, order.shape[1]).sum(-1)
