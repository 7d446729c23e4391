"""Exact inference on chain-structured languages by forward-backward in log space (float64, batched).

A ``ChainLanguage`` has hidden states ``z_1..z_T`` (``S`` values) and symbols ``x_1..x_T`` with

    p(x, z) = (1/Z) exp( sum_t u_t(z_t) + sum_t P_t(z_t, z_{t+1}) + sum_t E_t(z_t, x_t) ),

each emission row normalised, so a masked position has an emission factor of 1. An HMM has ``u_1 = log pi``,
``P_t = log A``, ``E_t = log B``; a Potts chain ``z = x`` (identity emission), ``u_t = h_t``, ``P_t(a, b) = J [a ==
b]``. With the evidence ``e_t(z) = E_t(z, x_t)`` at observed ``t`` (0 elsewhere):

    alpha_1 = u_1,   alpha_{t+1}(z') = u_{t+1}(z') + logsumexp_z(alpha_t(z) + e_t(z) + P_t(z, z'))
    beta_T = 0,      beta_t(z) = logsumexp_z'(P_t(z, z') + u_{t+1}(z') + e_{t+1}(z') + beta_{t+1}(z'))

and ``log p(x_t = v | x_{O \\ t}) = logsumexp_z(alpha_t + beta_t + E_t(z, v))`` normalised over ``v``."""

from __future__ import annotations

import torch

from ..errors import MLMProbError
from .base import SyntheticLanguage


class ChainLanguage(SyntheticLanguage):
    """A chain of hidden states with per-position emissions (see the module doc for the model).

    ``unary`` ``[T, S]``, ``pairwise`` ``[T-1, S, S]`` (or ``[S, S]``, shared), ``emission``
    ``[T, S, V]`` (or ``[S, V]``, shared) are log-potentials; emission rows must be normalised."""

    KIND = "chain"
    SPEC: tuple[str, ...] = ("vocab_size", "length", "n_states")
    TENSORS: tuple[str, ...] = ("unary", "pairwise", "emission")

    def __init__(self, unary: torch.Tensor, pairwise: torch.Tensor, emission: torch.Tensor):
        unary = torch.as_tensor(unary, dtype=torch.float64)
        pairwise = torch.as_tensor(pairwise, dtype=torch.float64)
        emission = torch.as_tensor(emission, dtype=torch.float64)
        if unary.dim() != 2:
            raise MLMProbError(f"unary log-potentials must have shape [T, S], got {tuple(unary.shape)}")
        T, S = unary.shape
        if pairwise.dim() == 2:
            pairwise = pairwise.expand(max(T - 1, 0), S, S)
        if emission.dim() == 2:
            emission = emission.expand(T, *emission.shape)
        if tuple(pairwise.shape) != (max(T - 1, 0), S, S):
            raise MLMProbError(
                f"pairwise log-potentials must have shape [{T - 1}, {S}, {S}], got {tuple(pairwise.shape)}"
            )
        if emission.dim() != 3 or emission.shape[:2] != (T, S):
            raise MLMProbError(f"emission log-probabilities must have shape [{T}, {S}, V], got {tuple(emission.shape)}")
        if not torch.allclose(torch.logsumexp(emission, -1), torch.zeros(T, S, dtype=torch.float64), atol=1e-9):
            raise MLMProbError("every emission row must be a normalised log-distribution over the vocabulary")
        self.length, self.n_states, self.vocab_size = T, S, emission.shape[-1]
        self.unary, self.pairwise, self.emission = unary, pairwise.contiguous(), emission.contiguous()
        self.log_z = self._log_evidence(torch.zeros(1, T, S, dtype=torch.float64)).item()  # no evidence

    def _evidence(self, ids: torch.Tensor) -> torch.Tensor:
        """``e [B, T, S]``: ``E_t(z, x_t)`` at observed positions, 0 at masked ones."""
        masked = ids == self.mask_id
        t_idx = torch.arange(self.length).expand_as(ids)
        e = self.emission[t_idx, :, ids.clamp(max=self.vocab_size - 1)]  # [B, T, S]
        return e.masked_fill(masked[..., None], 0.0)

    def _forward(self, e: torch.Tensor) -> torch.Tensor:
        """``alpha [B, T, S]``: ``alpha_t`` holds the evidence of positions before ``t``, not of ``t`` itself."""
        B, T, S = e.shape
        alpha = torch.empty(B, T, S, dtype=torch.float64)
        alpha[:, 0] = self.unary[0]
        for t in range(1, T):
            prev = (alpha[:, t - 1] + e[:, t - 1])[:, :, None] + self.pairwise[t - 1]  # [B, S, S']
            alpha[:, t] = self.unary[t] + torch.logsumexp(prev, dim=1)
        return alpha

    def _log_evidence(self, e: torch.Tensor) -> torch.Tensor:
        """``log`` of the unnormalised mass ``[B]`` of the evidence ``e [B, T, S]``."""
        return torch.logsumexp(self._forward(e)[:, -1] + e[:, -1], -1)

    def _posterior(self, e: torch.Tensor) -> torch.Tensor:
        """``alpha + beta [B, T, S]`` (``beta_t``: the evidence of positions after ``t``): ``z_t`` given the evidence
        of every position but ``t``."""
        B, T, S = e.shape
        beta = torch.zeros(B, T, S, dtype=torch.float64)
        for t in range(T - 2, -1, -1):
            nxt = (self.unary[t + 1] + e[:, t + 1] + beta[:, t + 1])[:, None, :] + self.pairwise[t]  # [B, S, S']
            beta[:, t] = torch.logsumexp(nxt, dim=2)
        return self._forward(e) + beta

    def _sample_states(self, ids: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """The states ``z [B, T]`` given the evidence of ``ids``, drawn backwards from the filtered messages."""
        e = self._evidence(ids)
        filtered = self._forward(e) + e  # evidence of <= t
        z = torch.empty(ids.shape[0], len(self.unary), dtype=torch.long)
        z[:, -1] = _draw(filtered[:, -1], generator)
        for t in range(len(self.unary) - 2, -1, -1):
            z[:, t] = _draw(filtered[:, t] + self.pairwise[t][:, z[:, t + 1]].T, generator)
        return z

    def log_marginal(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self._log_evidence(self._evidence(self.check_ids(input_ids))) - self.log_z

    def conditionals(self, input_ids: torch.Tensor) -> torch.Tensor:
        post = self._posterior(self._evidence(self.check_ids(input_ids)))
        out = torch.logsumexp(post[..., None] + self.emission, dim=2)  # [B, T, V]
        return out - torch.logsumexp(out, -1, keepdim=True)

    def sample_given(self, input_ids: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Forward filtering, backward sampling of ``z``, then the masked symbols from the emissions."""
        ids = self.check_ids(input_ids)
        if ids.shape[0] == 0:
            return ids.clone()
        z = self._sample_states(ids, generator)
        out = ids.clone()
        masked = ids == self.mask_id
        if masked.any():
            rows, cols = masked.nonzero(as_tuple=True)
            out[rows, cols] = _draw(self.emission[cols, z[rows, cols]], generator)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size}, length={self.length}, n_states={self.n_states})"


def _draw(logits: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One category per row of unnormalised log-probabilities ``[N, K]`` (float64)."""
    probs = torch.softmax(logits.to(torch.float64), -1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)
