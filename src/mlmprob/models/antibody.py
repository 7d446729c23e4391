"""The two embedded antibody models, loaded offline from their PyPI wheels, built as :mod:`mlmprob.models.native`
when they run the fused forward (the default) and as transformers' own classes with ``fused=False``.

- ``antiberty``: AntiBERTy (Ruffolo et al. 2021), a BERT MLM (8 layers, 512 wide, 26M parameters) shipped as
  ``antiberty==0.1.3``; its keys load into ``BertForMaskedLM``'s names (the species/chain/graft heads are dropped).
- ``sapiens-vh`` / ``sapiens-vl``: Sapiens (Prihoda et al. 2022), small RoBERTa MLMs (4 layers, 128 wide) shipped
  as fairseq checkpoints in ``sapiens==1.0.5`` (install it with ``pip install --no-deps``: it declares fairseq and
  an old torch, neither needed); the keys are converted here to ``RobertaForMaskedLM``'s."""

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


def _finish(
    model, state: dict, ignore: tuple[str, ...], what: str, tok: ResidueTokenizer, name: str, device, dtype, fused
):
    """``model`` with ``state`` loaded (keys ending in ``ignore`` may be missing or unexpected, any other misfit is
    one line), in its precision, behind the adapter with the residues as proposals."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith(ignore)]
    unexpected = [k for k in unexpected if not k.endswith(ignore)]
    if missing or unexpected:
        raise ModelLoadError(f"{what} weights do not fit: missing {missing}, unexpected {unexpected}")
    model = apply_precision(model, device, dtype)
    return HFMaskedLM(model, tok, name=name, proposal_ids=tok.residue_ids, max_length=tok.max_length, fused=fused)


def load_antiberty(device="cpu", dtype=None, fused: bool | None = None) -> HFMaskedLM:
    root = _package_dir("antiberty", "pip install antiberty==0.1.3") / "trained_models"
    tokens = (root / "vocab.txt").read_text().split()
    cfg = json.loads((root / "AntiBERTy_md_smooth" / "config.json").read_text())
    for k in ("architectures", "_name_or_path", "transformers_version", "gradient_checkpointing", "use_cache"):
        cfg.pop(k, None)
    model: torch.nn.Module
    if fused or (fused is None and fused_default()):  # without transformers whenever the fused forward runs
        kept = {f.name for f in dataclasses.fields(EncoderConfig)}
        model = MaskedLM(EncoderConfig(**{k: v for k, v in cfg.items() if k in kept}))
    else:
        from transformers import BertConfig, BertForMaskedLM

        model = BertForMaskedLM(BertConfig(**cfg))
    state = torch.load(root / "AntiBERTy_md_smooth" / "pytorch_model.bin", map_location="cpu", weights_only=True)
    wanted = ("bert.", "cls.predictions.")
    state = {k: v for k, v in state.items() if k.startswith(wanted) and not k.startswith("bert.pooler.")}
    n_pos = cfg["max_position_embeddings"]
    tok = ResidueTokenizer(tokens, bos="[CLS]", eos="[SEP]", pad="[PAD]", mask="[MASK]", unk="[UNK]", max_length=n_pos)
    return _finish(model, state, ("position_ids",), "AntiBERTy", tok, "antiberty", device, dtype, fused)


def _fairseq_to_hf_roberta(src: dict[str, torch.Tensor], n_layers: int) -> dict[str, torch.Tensor]:
    """Rename a fairseq RoBERTa (post-LN, tied output embedding) state dict to HF RobertaForMaskedLM keys."""
    enc, head = "decoder.sentence_encoder.", "decoder.lm_head."
    out = {
        "roberta.embeddings.word_embeddings.weight": src[enc + "embed_tokens.weight"],
        "roberta.embeddings.position_embeddings.weight": src[enc + "embed_positions.weight"],
        "roberta.embeddings.token_type_embeddings.weight": torch.zeros(1, src[enc + "embed_tokens.weight"].shape[1]),
        "lm_head.decoder.weight": src[head + "weight"],
        "lm_head.decoder.bias": src[head + "bias"],
        "lm_head.bias": src[head + "bias"],
    }
    names = {  # HF's name of each module with a weight and a bias: fairseq's
        "roberta.embeddings.LayerNorm": enc + "emb_layer_norm",
        "lm_head.dense": head + "dense",
        "lm_head.layer_norm": head + "layer_norm",
    }
    layer = {
        "attention.self.query": "self_attn.q_proj",
        "attention.self.key": "self_attn.k_proj",
        "attention.self.value": "self_attn.v_proj",
        "attention.output.dense": "self_attn.out_proj",
        "attention.output.LayerNorm": "self_attn_layer_norm",
        "intermediate.dense": "fc1",
        "output.dense": "fc2",
        "output.LayerNorm": "final_layer_norm",
    }
    for i in range(n_layers):
        names.update({f"roberta.encoder.layer.{i}.{b}": f"{enc}layers.{i}.{a}" for b, a in layer.items()})
    for b, a in names.items():
        for p in ("weight", "bias"):
            out[f"{b}.{p}"] = src[f"{a}.{p}"]
    return out


def load_sapiens(chain: str = "vh", device="cpu", dtype=None, fused: bool | None = None) -> HFMaskedLM:
    if chain not in ("vh", "vl"):
        raise ModelLoadError(f"sapiens chain must be 'vh' or 'vl', got {chain!r}")
    root = _package_dir("sapiens", "pip install --no-deps sapiens==1.0.5") / "models" / "v1"
    with torch.serialization.safe_globals([argparse.Namespace]):
        ck = torch.load(root / f"checkpoint_{chain}.pt", map_location="cpu", weights_only=True)
    saved, src = ck["args"], ck["model"]  # the fairseq options the checkpoint was trained with, its weights
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
    if fused or (fused is None and fused_default()):
        model = MaskedLM(EncoderConfig(**shape, roberta=True))
    else:
        from transformers import RobertaConfig, RobertaForMaskedLM

        extra = {"bos_token_id": 0, "eos_token_id": 2, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
        model = RobertaForMaskedLM(RobertaConfig(**shape, **extra, tie_word_embeddings=True))  # type: ignore[arg-type]
    state = _fairseq_to_hf_roberta(src, saved.encoder_layers)
    tok = ResidueTokenizer(tokens, bos="<s>", eos="</s>", pad="<pad>", mask="<mask>", unk="<unk>", max_length=n_pos - 2)
    return _finish(
        model, state, ("position_ids", "token_type_ids"), "Sapiens", tok, f"sapiens-{chain}", device, dtype, fused
    )
