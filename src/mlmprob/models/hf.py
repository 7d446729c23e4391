"""Adapter from a Hugging Face ``*ForMaskedLM`` model (and a tokenizer) to the MaskedLM protocol."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..errors import MLMProbError
from ..runtime.device import fused_default  # noqa: F401 - re-exported
from ..runtime.threads import invariant_method
from .fused import fused_encoder
from .length import text_config
from .precision import model_dtype
from .tokenizers import Encoding


def _head_of(model) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The module mapping last hidden states to vocabulary logits, when the family is known."""
    for name in ("cls", "lm_head", "predictions"):
        head = getattr(model, name, None)
        if isinstance(head, torch.nn.Module):
            return head
    if hasattr(model, "vocab_projector") and hasattr(model, "vocab_transform"):  # DistilBERT
        return lambda h: model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))
    return None


class HFMaskedLM:
    """A Hugging Face masked LM behind the ``MaskedLM`` protocol.

    ``logits_at`` runs the encoder once and applies the LM head only at the gathered positions, so scoring never
    materialises ``[B, L, V]`` logits. Inputs may be on any device; outputs come back on the CPU as float32. Right
    padding with ``pad_id`` is masked out of attention. ESM-2, BERT and RoBERTa encoders run through
    :mod:`mlmprob.models.fused` (``fused=False`` or ``$MLMPROB_FUSED=0``: transformers' own code). Every forward runs
    with thread-invariant products (:func:`mlmprob.runtime.threads.invariant_method`). ``pads_safely`` is set False
    by the load-time probe (:mod:`mlmprob.models.probe`) for a model whose outputs change when a row is padded: its
    rows are then forwarded unpadded."""

    pads_safely = True

    def _padded(self, ids: torch.Tensor) -> bool:
        """Whether ``ids`` must be forwarded row by row: padded rows of a model that does not honour padding."""
        return (
            not self.pads_safely and ids.shape[0] > 1 and self.pad_id is not None and bool((ids == self.pad_id).any())
        )

    def __init__(
        self,
        model,
        tokenizer,
        *,
        name: str = "",
        proposal_ids: Sequence[int] | None = None,
        max_length: int | None = None,
        pad_id: int | None = None,
        special_ids=None,
        fused: bool | None = None,
    ):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name or getattr(model.config, "_name_or_path", "") or type(model).__name__
        self.vocab_size = int(text_config(model).vocab_size)
        self.mask_id = int(tokenizer.mask_id)
        self.pad_id = pad_id if pad_id is not None else tokenizer.pad_id
        self.special_ids = frozenset(special_ids if special_ids is not None else tokenizer.special_ids)
        self.proposal_ids = None if proposal_ids is None else torch.tensor(list(proposal_ids), dtype=torch.long)
        self.max_length = max_length
        # a reserved padding id outside the vocabulary (tokenizers.padding_id) is replaced by a real one (masked)
        self._fill = None
        if self.pad_id is not None and self.pad_id >= self.vocab_size:
            cp = getattr(text_config(model), "pad_token_id", None)
            self._fill = cp if isinstance(cp, int) and 0 <= cp < self.vocab_size else 0
        self._base = getattr(model, model.base_model_prefix, None)
        self._head = _head_of(model)
        self.device, self.dtype = next(model.parameters()).device, model_dtype(model)
        use = (fused_default() if fused is None else fused) and self._head is not None and self._base is not None
        self._fused = fused_encoder(self._base) if use else None

    # -- what the model contract reads (models/reader.py) ------------------------------------------
    @property
    def head_shortcut(self) -> bool:
        """Whether reads apply the LM head module only at the read positions (False: the whole forward's logits)."""
        return self._head is not None

    @property
    def fused(self) -> bool:
        """Whether mlmprob's fused encoder forward runs (:mod:`mlmprob.models.fused`)."""
        return self._fused is not None

    def read_full_logits(self) -> None:
        """Read the whole forward's logits from now on (no head shortcut, no fused forward): the probe's fallback."""
        self._head, self._fused = None, None

    def _hidden(self, ids: torch.Tensor, rows=None, cols=None) -> torch.Tensor:
        """Final hidden states of ``ids``: ``[B, L, H]``, or ``[N, H]`` at ``(rows, cols)``."""
        mask = self._attention_mask(ids)
        ids = self._feed(ids)
        if self._fused is not None:
            return self._fused.hidden(ids, mask, rows, cols)
        assert self._base is not None  # callers read hidden states only from a model with a base
        hidden = self._base(input_ids=ids, attention_mask=mask)[0]
        return hidden if rows is None else hidden[rows, cols]

    # -- protocol -------------------------------------------------------------------------------
    def _check(self, input_ids: torch.Tensor) -> torch.Tensor:
        ids = torch.as_tensor(input_ids, dtype=torch.long)
        if ids.dim() != 2:
            raise MLMProbError(f"input_ids must have shape [B, L], got {tuple(ids.shape)}")
        if self.max_length is not None and ids.shape[1] > self.max_length:
            raise MLMProbError(
                f"input of {ids.shape[1]} tokens is longer than the model's maximum of {self.max_length}"
            )
        outside = (ids < 0) | (ids >= self.vocab_size)
        if self._fill is not None:
            outside &= ids != self.pad_id
        if ids.numel() and bool(outside.any()):
            ids = ids[~(ids == self.pad_id)] if self._fill is not None else ids
            raise MLMProbError(
                f"token ids must lie in 0..{self.vocab_size - 1} for this model's vocabulary, got "
                f"{int(ids.min())}..{int(ids.max())} (ids from another tokenizer?)"
            )
        return ids.to(self.device)

    def _attention_mask(self, ids: torch.Tensor) -> torch.Tensor | None:
        return None if self.pad_id is None else (ids != self.pad_id).long()

    def _feed(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids`` as the model may read them: a reserved padding id replaced by a real one (masked anyway)."""
        return ids if self._fill is None else ids.masked_fill(ids == self.pad_id, self._fill)

    def _full(self, ids: torch.Tensor) -> torch.Tensor:
        """The plain model's whole forward: logits ``[B, L, V]`` on its device."""
        return self.model(input_ids=self._feed(ids), attention_mask=self._attention_mask(ids)).logits

    @torch.inference_mode()
    @invariant_method
    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        ids = self._check(input_ids)
        if self._padded(ids):
            from .probe import unpadded_logits

            return unpadded_logits(self, ids, lambda one: self.logits(one))
        if self._fused is not None:
            assert self._head is not None  # fused only with a head (see __init__)
            return self._head(self._hidden(ids)).float().cpu()
        return self._full(ids).float().cpu()

    @torch.inference_mode()
    @invariant_method
    def logits_at(self, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        ids = self._check(input_ids)
        if self._padded(ids):
            return self.logits(ids)[torch.as_tensor(rows).cpu(), torch.as_tensor(cols).cpu()]
        if self._base is None or self._head is None:
            return self._full(ids)[rows, cols].float().cpu()
        rows, cols = torch.as_tensor(rows).to(self.device), torch.as_tensor(cols).to(self.device)
        return self._head(self._hidden(ids, rows, cols)).float().cpu()

    @torch.inference_mode()
    @invariant_method
    def device_logits_at(self, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """``logits_at`` for the hot path: inputs validated and on the model's device, where the logits stay (model
        dtype), so the caller's loop makes no host synchronisation."""
        if self._base is None or self._head is None:
            return self._full(input_ids)[rows, cols]
        return self._head(self._hidden(input_ids, rows, cols))

    @torch.inference_mode()
    @invariant_method
    def hidden_at(self, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """Final hidden states ``[N, H]`` (float32, CPU) at ``(rows, cols)`` of ``input_ids`` as given: the LM head's
        input (read by the one-pass PLL)."""
        if self._base is None or self._head is None:
            raise MLMProbError(f"{self.name}: no separable LM head, so no hidden states for the one-pass PLL")
        ids = self._check(input_ids)
        rows, cols = torch.as_tensor(rows).to(self.device), torch.as_tensor(cols).to(self.device)
        return self._hidden(ids, rows, cols).float().cpu()

    @invariant_method
    def head_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The LM head on hidden states ``[N, H]`` -> logits ``[N, V]`` (float32, CPU), differentiable in ``hidden``
        (for fitting the one-pass correction)."""
        if self._head is None:
            raise MLMProbError(f"{self.name}: no separable LM head")
        head_dtype = next((self._head if isinstance(self._head, torch.nn.Module) else self.model).parameters()).dtype
        return self._head(hidden.to(self.device, head_dtype)).float().cpu()

    def input_embedding(self, ids: torch.Tensor) -> torch.Tensor:
        """The input word embeddings ``[N, H]`` (float32, CPU) of token ids ``[N]``."""
        emb = self.model.get_input_embeddings()
        with torch.no_grad():
            return emb(torch.as_tensor(ids, dtype=torch.long).to(self.device)).float().cpu()

    # -- text ------------------------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> Encoding:
        return self.tokenizer.encode(texts)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids)

    def __repr__(self) -> str:
        return f"HFMaskedLM({self.name!r}, vocab_size={self.vocab_size}, device={self.device}, dtype={self.dtype})"
