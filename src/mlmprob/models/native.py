"""The embedded BERT and RoBERTa masked LMs without transformers (whose import takes seconds): the same modules,
parameter names and weights as transformers' ``BertForMaskedLM`` / ``RobertaForMaskedLM``, run by the fused forward
(:mod:`mlmprob.models.fused`); :mod:`mlmprob.models.antibody` builds transformers' own only for ``fused=False``. The
embeddings add in transformers' order (word + token type, then + position), so the logits are bit for bit those of
transformers' model under the fused forward."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .fused import FusedBert


@dataclass
class EncoderConfig:
    """What the fused forward and the adapters read of a model's configuration (transformers' names)."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    hidden_act: str = "gelu"
    position_embedding_type: str = "absolute"
    roberta: bool = False  # positions counted from pad_token_id + 1 over the non-pad tokens
    is_decoder: bool = False
    add_cross_attention: bool = False


def _node(**children) -> nn.Module:
    """A module holding ``children`` under their names (transformers' nesting, so its parameter names)."""
    m = nn.Module()
    for name, child in children.items():
        setattr(m, name, child)
    return m


class Embeddings(nn.Module):
    """Word, token-type (type 0) and position embeddings, summed in transformers' order, then a layer norm."""

    def __init__(self, c: EncoderConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.pad, self.roberta = c.pad_token_id, c.roberta

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.roberta:
            keep = input_ids.ne(self.pad).int()
            positions = (torch.cumsum(keep, dim=1).type_as(keep) * keep).long() + self.pad
        else:
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)[None, :]
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(torch.zeros_like(input_ids))
        return self.LayerNorm(x + self.position_embeddings(positions))


def _layer(c: EncoderConfig) -> nn.Module:
    h, ln = c.hidden_size, lambda: nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
    return _node(
        attention=_node(
            self=_node(query=nn.Linear(h, h), key=nn.Linear(h, h), value=nn.Linear(h, h)),
            output=_node(dense=nn.Linear(h, h), LayerNorm=ln()),
        ),
        intermediate=_node(dense=nn.Linear(h, c.intermediate_size)),
        output=_node(dense=nn.Linear(c.intermediate_size, h), LayerNorm=ln()),
    )


class Encoder(nn.Module):
    """The base model: embeddings and post-norm layers (read by :class:`mlmprob.models.fused.FusedBert`)."""

    fused_family = "bert"

    def __init__(self, c: EncoderConfig):
        super().__init__()
        self.config = c
        self.embeddings = Embeddings(c)
        self.encoder = _node(layer=nn.ModuleList(_layer(c) for _ in range(c.num_hidden_layers)))


class Head(nn.Module):
    """The LM head: dense, GELU, layer norm, then the decoder tied to the word embeddings (with its bias);
    BERT nests it as ``predictions.transform.dense`` / ``.LayerNorm``, RoBERTa as ``dense`` / ``layer_norm``."""

    def __init__(self, c: EncoderConfig, words: nn.Embedding):
        super().__init__()
        h = c.hidden_size
        decoder = nn.Linear(h, c.vocab_size)
        decoder.weight = words.weight
        if c.roberta:
            self.dense, self.layer_norm, self.decoder = nn.Linear(h, h), nn.LayerNorm(h, eps=c.layer_norm_eps), decoder
            self.bias = decoder.bias
        else:
            transform = _node(dense=nn.Linear(h, h), LayerNorm=nn.LayerNorm(h, eps=c.layer_norm_eps))
            self.predictions = _node(transform=transform, decoder=decoder, bias=decoder.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "predictions"):
            p: Any = self.predictions
            dense, norm, decoder = p.transform.dense, p.transform.LayerNorm, p.decoder
        else:
            dense, norm, decoder = self.dense, self.layer_norm, self.decoder
        return decoder(norm(F.gelu(dense(hidden))))


class MaskedLM(nn.Module):
    """A BERT (``bert.``, ``cls.``) or RoBERTa (``roberta.``, ``lm_head.``) masked LM with transformers' names."""

    def __init__(self, c: EncoderConfig):
        super().__init__()
        self.config = c
        self.base_model_prefix = "roberta" if c.roberta else "bert"
        base = Encoder(c)
        setattr(self, self.base_model_prefix, base)
        setattr(self, "lm_head" if c.roberta else "cls", Head(c, base.embeddings.word_embeddings))
        self.__dict__["_fused"] = FusedBert(base)  # not a submodule; it keeps each layer's concatenated Q/K/V weights

    def get_input_embeddings(self) -> nn.Embedding:
        return getattr(self, self.base_model_prefix).embeddings.word_embeddings

    @torch.inference_mode()
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> SimpleNamespace:
        """``.logits`` ``[B, L, V]``: the fused forward's hidden states through the head (for reading only: the
        fused forward runs in inference mode)."""
        hidden = self.__dict__["_fused"].hidden(input_ids, attention_mask)
        return SimpleNamespace(logits=getattr(self, "lm_head" if self.config.roberta else "cls")(hidden))
