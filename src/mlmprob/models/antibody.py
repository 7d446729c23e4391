"""The two embedded antibody models, loaded offline from their PyPI wheels.

- ``antiberty``: AntiBERTy (Ruffolo et al. 2021), a BERT MLM (8 layers, 512 wide, 26M parameters)
  shipped as ``antiberty==0.1.3``; its keys load into ``BertForMaskedLM``'s names (the
  species/chain/graft heads are dropped).
- ``sapiens-vh`` / ``sapiens-vl``: Sapiens (Prihoda et al. 2022), small RoBERTa MLMs (4 layers,
  128 wide) shipped as fairseq checkpoints in ``sapiens==1.0.5``; the keys are converted here to
  ``RobertaForMaskedLM``'s. Install that wheel with ``pip install --no-deps`` (it
  declares fairseq and an old torch, neither of which is needed).

Both are built as :mod:`mlmprob.models.native` (no transformers import: seconds less per start) when they run
the fused forward, the default, and as transformers' own classes with ``fused=False``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
from pathlib import Path

import torch

from ..errors import ModelLoadError
from ..runtime.device import fused_default
from .hf import HFMaskedLM
from .native import EncoderConfig, MaskedLM
from .precision import apply_precision
from .tokenizers import ResidueTokenizer


def _package_dir(name: str, install_hint: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(f"the '{name}' package with its weights is not installed: {install_hint}")
    return Path(list(spec.submodule_search_locations)[0])


def _finish(model, device, dtype):
    return apply_precision(model, device, dtype)


def _native(fused: bool | None) -> bool:
    """Whether an embedded model is built without transformers (:mod:`mlmprob.models.native`): whenever it runs
    the fused forward, the default; ``fused=False`` (or ``$MLMPROB_FUSED=0``) builds transformers' own class."""
    return fused_default() if fused is None else fused


def _load_into(model, state: dict, what: str, ignore: tuple[str, ...]):
    """``model`` with ``state`` loaded (keys ending in ``ignore`` may be missing or unexpected), or one line."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith(ignore)]
    unexpected = [k for k in unexpected if not k.endswith(ignore)]
    if missing or unexpected:
        raise ModelLoadError(f"{what} weights do not fit: missing {missing}, unexpected {unexpected}")
    return model


def load_antiberty(device="cpu", dtype=None, fused: bool | None = None) -> HFMaskedLM:
    root = _package_dir("antiberty", "pip install antiberty==0.1.3") / "trained_models"
    tokens = (root / "vocab.txt").read_text().split()
    cfg = json.loads((root / "AntiBERTy_md_smooth" / "config.json").read_text())
    for k in ("architectures", "_name_or_path", "transformers_version", "gradient_checkpointing", "use_cache"):
        cfg.pop(k, None)
    model: torch.nn.Module
    if _native(fused):
        kept = {f.name for f in dataclasses.fields(EncoderConfig)}
        config = EncoderConfig(**{k: v for k, v in cfg.items() if k in kept})
        model = MaskedLM(config)
    else:
        from transformers import BertConfig, BertForMaskedLM

        model = BertForMaskedLM(BertConfig(**cfg))
    state = torch.load(root / "AntiBERTy_md_smooth" / "pytorch_model.bin", map_location="cpu", weights_only=True)
    state = {
        k: v
        for k, v in state.items()
        if k.startswith(("bert.", "cls.predictions.")) and not k.startswith("bert.pooler.")
    }
    _load_into(model, state, "AntiBERTy", ("position_ids",))
    tok = ResidueTokenizer(
        tokens,
        bos="[CLS]",
        eos="[SEP]",
        pad="[PAD]",
        mask="[MASK]",
        unk="[UNK]",
        max_length=cfg["max_position_embeddings"],
    )
    return HFMaskedLM(
        _finish(model, device, dtype),
        tok,
        name="antiberty",
        proposal_ids=tok.residue_ids,
        max_length=tok.max_length,
        fused=fused,
    )


def _fairseq_to_hf_roberta(src: dict[str, torch.Tensor], n_layers: int) -> dict[str, torch.Tensor]:
    """Rename a fairseq RoBERTa (post-LN, tied output embedding) state dict to HF RobertaForMaskedLM keys."""
    enc = "decoder.sentence_encoder."
    out = {
        "roberta.embeddings.word_embeddings.weight": src[enc + "embed_tokens.weight"],
        "roberta.embeddings.position_embeddings.weight": src[enc + "embed_positions.weight"],
        "roberta.embeddings.LayerNorm.weight": src[enc + "emb_layer_norm.weight"],
        "roberta.embeddings.LayerNorm.bias": src[enc + "emb_layer_norm.bias"],
        "lm_head.dense.weight": src["decoder.lm_head.dense.weight"],
        "lm_head.dense.bias": src["decoder.lm_head.dense.bias"],
        "lm_head.layer_norm.weight": src["decoder.lm_head.layer_norm.weight"],
        "lm_head.layer_norm.bias": src["decoder.lm_head.layer_norm.bias"],
        "lm_head.decoder.weight": src["decoder.lm_head.weight"],
        "lm_head.decoder.bias": src["decoder.lm_head.bias"],
        "lm_head.bias": src["decoder.lm_head.bias"],
    }
    hidden = src[enc + "embed_tokens.weight"].shape[1]
    out["roberta.embeddings.token_type_embeddings.weight"] = torch.zeros(1, hidden)
    names = {
        "self_attn.q_proj": "attention.self.query",
        "self_attn.k_proj": "attention.self.key",
        "self_attn.v_proj": "attention.self.value",
        "self_attn.out_proj": "attention.output.dense",
        "self_attn_layer_norm": "attention.output.LayerNorm",
        "fc1": "intermediate.dense",
        "fc2": "output.dense",
        "final_layer_norm": "output.LayerNorm",
    }
    for i in range(n_layers):
        for a, b in names.items():
            for p in ("weight", "bias"):
                out[f"roberta.encoder.layer.{i}.{b}.{p}"] = src[f"{enc}layers.{i}.{a}.{p}"]
    return out


def load_sapiens(chain: str = "vh", device="cpu", dtype=None, fused: bool | None = None) -> HFMaskedLM:
    if chain not in ("vh", "vl"):
        raise ModelLoadError(f"sapiens chain must be 'vh' or 'vl', got {chain!r}")
    root = _package_dir("sapiens", "pip install --no-deps sapiens==1.0.5") / "models" / "v1"
    with torch.serialization.safe_globals([argparse.Namespace]):
        ck = torch.load(root / f"checkpoint_{chain}.pt", map_location="cpu", weights_only=True)
    saved, src = ck["args"], ck["model"]  # the fairseq options the checkpoint was trained with
    # fairseq Dictionary: <s> <pad> </s> <unk>, then dict.txt symbols, then <mask> added by the MLM task
    symbols = [line.split()[0] for line in (root / "dict.txt").read_text().splitlines() if line.strip()]
    tokens = ["<s>", "<pad>", "</s>", "<unk>"] + symbols + ["<mask>"]
    n_pos = src["decoder.sentence_encoder.embed_positions.weight"].shape[0]
    shape = dict(
        vocab_size=len(tokens),
        hidden_size=saved.encoder_embed_dim,
        num_hidden_layers=saved.encoder_layers,
        num_attention_heads=saved.encoder_attention_heads,
        intermediate_size=saved.encoder_ffn_embed_dim,
        hidden_act=saved.activation_fn,
        max_position_embeddings=n_pos,
        type_vocab_size=1,
        pad_token_id=1,
        layer_norm_eps=1e-5,
    )
    if len(tokens) != src["decoder.sentence_encoder.embed_tokens.weight"].shape[0]:
        raise ModelLoadError(
            f"sapiens dictionary has {len(tokens)} symbols but the checkpoint has "
            f"{src['decoder.sentence_encoder.embed_tokens.weight'].shape[0]} embeddings"
        )
    model: torch.nn.Module
    if _native(fused):
        model = MaskedLM(EncoderConfig(**shape, roberta=True))
    else:
        from transformers import RobertaConfig, RobertaForMaskedLM

        extra = {"bos_token_id": 0, "eos_token_id": 2, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
        model = RobertaForMaskedLM(RobertaConfig(**shape, **extra, tie_word_embeddings=True))  # type: ignore[arg-type]
    state = _fairseq_to_hf_roberta(src, saved.encoder_layers)
    _load_into(model, state, "Sapiens", ("position_ids", "token_type_ids"))
    tok = ResidueTokenizer(tokens, bos="<s>", eos="</s>", pad="<pad>", mask="<mask>", unk="<unk>", max_length=n_pos - 2)
    return HFMaskedLM(
        _finish(model, device, dtype),
        tok,
        name=f"sapiens-{chain}",
        proposal_ids=tok.residue_ids,
        max_length=tok.max_length,
        fused=fused,
    )
