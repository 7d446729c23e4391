"""View a model trained on a synthetic language in the language's own ids (``0..V-1``, mask ``V``)."""

from __future__ import annotations

import torch

from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from .data import SYMBOL_OFFSET


class SymbolMLM:
    """``MaskedLM`` over symbols ``0..V-1`` with ``mask_id = V``, backed by a model whose ids are ``[CLS] symbol +
    SYMBOL_OFFSET [SEP]`` (what ``train`` writes for synthetic data). Logits are the model's, restricted to the ``V``
    symbol ids, so they compare directly with ``language.as_mlm()``.

    >>> import torch
    >>> class Echo:  # stand-in for a trained model: logits of a 5 + 3 id vocabulary
    ...     mask_id, vocab_size = 4, 8
    ...     def logits(self, ids): return torch.zeros(*ids.shape, 8)
    >>> SymbolMLM(Echo(), 3, 4).logits(torch.tensor([[0, 3, 2, 1]])).shape
    torch.Size([1, 4, 3])
    """

    def __init__(self, model: MaskedLM, vocab_size: int, length: int, cls_id: int = 2, sep_id: int = 3):
        if model.vocab_size < SYMBOL_OFFSET + vocab_size:
            raise MLMProbError(
                f"the model's vocabulary ({model.vocab_size}) cannot hold {vocab_size} symbols "
                f"after {SYMBOL_OFFSET} special tokens"
            )
        self.model, self.vocab_size, self.length = model, vocab_size, length
        self.mask_id, self.max_length = vocab_size, length
        self.cls_id, self.sep_id = cls_id, sep_id

    def _to_model(self, input_ids: torch.Tensor) -> torch.Tensor:
        ids = torch.as_tensor(input_ids, dtype=torch.long)
        if ids.dim() != 2 or ids.shape[1] != self.length:
            raise MLMProbError(f"input_ids must have shape [B, {self.length}], got {tuple(ids.shape)}")
        if ids.numel() and (ids.min() < 0 or ids.max() > self.mask_id):
            raise MLMProbError(f"token ids must lie in 0..{self.mask_id} ({self.mask_id} = mask)")
        inner = torch.where(ids == self.mask_id, torch.full_like(ids, self.model.mask_id), ids + SYMBOL_OFFSET)
        B = ids.shape[0]
        return torch.cat([torch.full((B, 1), self.cls_id), inner, torch.full((B, 1), self.sep_id)], 1)

    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        out = self.model.logits(self._to_model(input_ids))
        return out[:, 1:-1, SYMBOL_OFFSET : SYMBOL_OFFSET + self.vocab_size]
