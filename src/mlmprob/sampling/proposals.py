"""MLM conditionals turned into proposal distributions: support, temperature, nucleus (top-p).

A proposal row is a float64 log-probability vector over the vocabulary with ``-inf`` outside its
support. The same function maps a row of logits to the same distribution every time, so the
forward move ``q(x'|x)`` and the reverse move ``q(x|x')`` (read from the very same row, because
``x'`` and ``x`` agree outside the proposed block) are computed under one distribution. With
nucleus truncation the current token may lie outside the nucleus: its reverse probability is 0
and MH rejects the move.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import MLMProbError
from ..models.alphabet import allowed_ids  # noqa: F401 - re-exported: samplers import it from here


@dataclass(frozen=True)
class ProposalConfig:
    """How an MLM conditional is modified before proposing from it.

    ``temperature`` divides the logits (0 means greedy: all mass on the arg-max); ``top_p`` keeps
    the smallest set of most probable tokens whose (tempered) probability reaches ``top_p``.
    """

    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self):
        if not (self.temperature >= 0.0) or self.temperature == float("inf"):
            raise MLMProbError(f"proposal_temperature must be a finite number >= 0, got {self.temperature}")
        if not (0.0 < self.top_p <= 1.0):
            raise MLMProbError(f"top_p must lie in (0, 1], got {self.top_p}")


def proposal_log_probs(logits: torch.Tensor, allowed: torch.Tensor | None = None,
                       config: ProposalConfig = ProposalConfig()) -> torch.Tensor:
    """Proposal log-probabilities ``[n, V]`` (float64, ``-inf`` outside the support) from logits ``[n, V]``.

    Order: restrict to ``allowed``, apply the temperature, then the nucleus.

    >>> lp = proposal_log_probs(torch.log(torch.tensor([[0.5, 0.3, 0.2]])), config=ProposalConfig(top_p=0.7))
    >>> lp.exp()        # nucleus {0, 1}: 0.5 + 0.3 >= 0.7, renormalised
    tensor([[0.6250, 0.3750, 0.0000]], dtype=torch.float64)
    >>> proposal_log_probs(torch.tensor([[1.0, 3.0, 2.0]]), config=ProposalConfig(temperature=0)).exp()
    tensor([[0., 1., 0.]], dtype=torch.float64)
    """
    x = logits.double()
    if allowed is not None:
        x = x.masked_fill(~allowed.to(x.device), float("-inf"))
    if config.temperature == 0.0:
        best = x.argmax(-1, keepdim=True)
        out = torch.full_like(x, float("-inf"))
        return out.scatter_(-1, best, 0.0)
    if config.temperature != 1.0:
        x = x / config.temperature
    lp = x - torch.logsumexp(x, -1, keepdim=True)
    if config.top_p < 1.0:
        sorted_lp, order = lp.sort(dim=-1, descending=True, stable=True)
        p = sorted_lp.exp()
        before = p.cumsum(-1) - p             # mass strictly before each token in sorted order
        keep_sorted = before < config.top_p   # the first token is always kept
        keep = torch.zeros_like(keep_sorted).scatter_(-1, order, keep_sorted)
        lp = lp.masked_fill(~keep, float("-inf"))
        lp = lp - torch.logsumexp(lp, -1, keepdim=True)
    return lp


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
