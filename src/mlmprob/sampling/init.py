"""Which positions are free, and the chains' first states: ``"given"`` (the input; masks at free positions filled
greedily), ``"greedy"`` (every free position masked and filled by its arg-max in one pass: Goyal et al.'s warm start)
or ``"random"`` (uniform proposable tokens). Positions that are not free never change.
"""

from __future__ import annotations

import torch

from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from ..positions import TOKENS_AND_MASKS, Positions, resolve
from .forward import block_logits
from .options import INITS, ProposalConfig
from .proposals import allowed_ids, proposal_log_probs


def resolve_free(mlm: MaskedLM, ids: torch.Tensor, positions: Positions = None) -> torch.Tensor:
    """Bool ``[B, L]`` of free positions: ``positions`` (indices shared by the batch, or a bool mask),
    else every non-special position, mask tokens included: :func:`mlmprob.positions.resolve` under the rule
    :data:`~mlmprob.positions.TOKENS_AND_MASKS` (a :class:`~mlmprob.positions.Resolved` mask is taken as it is).

    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.zeros(2, 2, 2))
    >>> resolve_free(m, torch.tensor([[0, 2, 1]]), [1, 2]).tolist()
    [[False, True, True]]
    """
    return resolve(mlm, ids, positions, TOKENS_AND_MASKS)


def initialize(
    mlm: MaskedLM, ids: torch.Tensor, free: torch.Tensor, init: str = "given", generator: torch.Generator | None = None
) -> tuple[torch.Tensor, int]:
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
    logits, n = block_logits(mlm, ids, fill)  # none to fill: no call
    best = proposal_log_probs(logits, allowed, ProposalConfig(temperature=0.0)).argmax(-1)
    out[fill] = best
    return out, n
