"""Which positions are free, and the chains' first states.

- ``"given"``: the input as it is; mask tokens at free positions are filled greedily;
- ``"greedy"``: every free position masked, then filled with its arg-max in one forward pass
  (Goyal et al., Algorithm 1, line 3: the warm start);
- ``"random"``: uniform random proposable tokens at the free positions.

Positions that are not free (clamped context, special tokens, padding) never change.
"""

from __future__ import annotations

import torch

from ..energy import Positions, resolve_positions
from ..errors import MLMProbError, PositionsError
from ..models.protocol import MaskedLM, default_positions, lengths_of
from .forward import block_logits
from .proposals import ProposalConfig, allowed_ids, proposal_log_probs

INITS = ("given", "greedy", "random")


def resolve_free(mlm: MaskedLM, ids: torch.Tensor, positions: Positions = None) -> torch.Tensor:
    """Bool ``[B, L]`` of free positions: ``positions`` (indices shared by the batch, or a bool mask),
    else every non-special position, mask tokens included.

    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.zeros(2, 2, 2))
    >>> resolve_free(m, torch.tensor([[0, 2, 1]]), [1, 2]).tolist()
    [[False, True, True]]
    """
    is_mask = ids == mlm.mask_id
    inside = torch.arange(ids.shape[1])[None, :] < lengths_of(mlm, ids)[:, None]
    filler = ids.masked_fill(is_mask, int(allowed_ids(mlm).nonzero()[0]))
    if positions is None:
        free = (default_positions(mlm, filler) & inside) | (is_mask & inside)
        if not free.any(-1).all():
            raise PositionsError(f"sequence {int((~free.any(-1)).nonzero()[0])} has no free position to sample")
        return free
    free = resolve_positions(mlm, filler, positions)
    stray = is_mask & inside & ~free
    if stray.any():
        b, t = stray.nonzero()[0].tolist()
        raise PositionsError(f"position {t} of sequence {b} holds the mask token but is not among the free positions")
    return free


def initialize(mlm: MaskedLM, ids: torch.Tensor, free: torch.Tensor, init: str = "given",
               generator: torch.Generator | None = None) -> tuple[torch.Tensor, int]:
    """First states ``[B, L]`` and the number of rows forwarded.

    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> initialize(m, torch.tensor([[2, 2]]), torch.tensor([[True, True]]), "greedy")[0].tolist()
    [[1, 1]]
    """
    if init not in INITS:
        raise MLMProbError(f"init must be one of {INITS}, got {init!r}")
    allowed = allowed_ids(mlm)
    out = ids.clone()
    if init == "random":
        if generator is None:
            raise MLMProbError("init='random' needs a generator")
        choices = allowed.nonzero()[:, 0]
        draw = torch.randint(len(choices), tuple(ids.shape), generator=generator)
        out[free] = choices[draw][free]
        return out, 0
    fill = free if init == "greedy" else free & (ids == mlm.mask_id)
    if not fill.any():
        return out, 0
    logits, n = block_logits(mlm, ids, fill)
    best = proposal_log_probs(logits, allowed, ProposalConfig(temperature=0.0)).argmax(-1)
    out[fill] = best
    return out, n
