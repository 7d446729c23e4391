"""The one proposal alphabet: the output ids a sampler may propose and a chain-rule likelihood normalises over."""

from __future__ import annotations

import torch

from .protocol import MaskedLM
from .reader import reader_of


def allowed_ids(mlm: MaskedLM) -> torch.Tensor:
    """Bool ``[V]``: ids that may be proposed (the model's ``proposal_ids``, else every id except
    special ids, padding and the mask)."""
    mlm = reader_of(mlm)
    V = mlm.vocab_size
    if mlm.proposal_ids is not None:
        return torch.zeros(V, dtype=torch.bool).index_fill_(0, mlm.proposal_ids, True)
    out = torch.ones(V, dtype=torch.bool)
    for s in mlm.special_ids | {mlm.pad_id, mlm.mask_id}:
        if s is not None and 0 <= s < V:
            out[s] = False
    return out
