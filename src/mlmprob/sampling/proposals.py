"""MLM conditionals turned into proposal distributions: :func:`proposal_log_probs`, the package's one proposal
function (the samplers, the greedy start and the infilling baselines), so they all keep the same nucleus. MH's forward
and reverse moves read the same row (a current token outside the nucleus has reverse probability 0: MH rejects).
"""

from __future__ import annotations

import torch

from ..mcmc.moves import sample_from  # noqa: F401 - re-exported: samplers import it from here
from ..models.alphabet import allowed_ids  # noqa: F401 - re-exported: samplers import it from here
from .options import ProposalConfig


def proposal_log_probs(
    logits: torch.Tensor, allowed: torch.Tensor | None = None, config: ProposalConfig = ProposalConfig()
) -> torch.Tensor:
    """Proposal log-probabilities ``[n, V]`` (float64, ``-inf`` outside the support) from logits ``[n, V]``:
    restricted to ``allowed``, at the temperature (0: the arg-max, lowest id on a tie), then the nucleus.

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
        lp = nucleus(lp, config.top_p)
    return lp


#: How far below ``top_p`` the running mass may fall and still count as reaching it (float64 rounding).
NUCLEUS_TOLERANCE = 1e-12


def nucleus(log_probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Normalised log-probabilities ``[n, V]`` -> their ``top_p`` nucleus, renormalised (float64).

    Kept: the shortest prefix of the tokens ranked by decreasing probability, ties by increasing id,
    whose mass reaches ``top_p - NUCLEUS_TOLERANCE``; the first token is always kept."""
    lp = log_probs.double()
    sorted_lp, order = lp.sort(dim=-1, descending=True, stable=True)  # stable: ties by increasing id
    p = sorted_lp.exp()
    before = p.cumsum(-1) - p  # mass strictly before each token
    keep_sorted = before < top_p - NUCLEUS_TOLERANCE
    keep_sorted[..., 0] = True  # the first token is always kept (even for top_p below the tolerance)
    keep = torch.zeros_like(keep_sorted).scatter_(-1, order, keep_sorted)
    lp = lp.masked_fill(~keep, float("-inf"))
    return lp - torch.logsumexp(lp, -1, keepdim=True)
