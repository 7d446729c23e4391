"""Tiny random-weight models of every architecture in transformers' masked-LM mapping, built offline and
saved with a word-level tokenizer for ``load_mlm(folder)``; shared by tests/models/test_conformance.py and
docs/models_table.py and tests/commands/test_check_model.py. ``build(model_type, folder)`` returns None when built,
else why it cannot be (``build_model``: the model as built too)."""

from __future__ import annotations

import torch

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "ran",
    "on",
    "mat",
    "big",
    "red",
    "old",
    "new",
    "sun",
    "sky",
    "and",
    "is",
    "was",
    "one",
    "two",
    "tree",
    "bird",
    "fish",
    "hat",
    "cup",
    "pen",
]
VOCAB = SPECIALS + WORDS  # 30 ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4
PAD, UNK, CLS, SEP, MASK = range(5)
MAX_POSITIONS = 40

# tiny sizes, applied to every field a config has
TINY = dict(
    vocab_size=len(VOCAB),
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=MAX_POSITIONS,
    pad_token_id=PAD,
    bos_token_id=CLS,
    eos_token_id=SEP,
    mask_token_id=MASK,
    cls_token_id=CLS,
    sep_token_id=SEP,
    unk_token_id=UNK,
    num_key_value_heads=2,
    head_dim=8,
    embedding_size=16,
    d_model=16,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=32,
    decoder_ffn_dim=32,
    emb_dim=16,
    n_layers=1,
    n_heads=2,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    dropout=0.0,
    attention_dropout=0.0,
    initializer_range=0.2,
    n_words=len(VOCAB),
    pad_index=PAD,
    mask_index=MASK,
    unk_index=UNK,
    bos_index=CLS,
    eos_index=SEP,
    global_attention_indexes=[],
)

# per-architecture fields beyond TINY (sizes that must agree with each other, layouts)
SPECIAL = {
    "funnel": dict(block_sizes=[1, 1], d_head=8, d_inner=32, n_head=2, num_decoder_layers=1, d_model=16),
    "neomme": dict(hidden_size=32, head_dim=16),
    "mobilebert": dict(true_hidden_size=16, intra_bottleneck_size=16, num_feedforward_networks=1, embedding_size=16),
    "esm": dict(position_embedding_type="rotary", token_dropout=True),  # ESM-2's layout (the fused path)
    "longformer": dict(attention_window=[4]),
    "big_bird": dict(attention_type="original_full"),
    "reformer": dict(
        attn_layers=["local"],
        axial_pos_shape=[4, 10],
        axial_pos_embds_dim=[8, 8],
        local_attn_chunk_length=8,
        feed_forward_size=32,
        attention_head_size=8,
        num_buckets=4,
        is_decoder=False,
        max_position_embeddings=MAX_POSITIONS,
    ),
    "perceiver": dict(
        d_latents=16,
        num_latents=8,
        num_blocks=1,
        num_self_attends_per_block=1,
        num_self_attention_heads=2,
        num_cross_attention_heads=2,
        qk_channels=16,
        v_channels=16,
    ),
    "squeezebert": dict(
        embedding_size=16,
        q_groups=2,
        k_groups=2,
        v_groups=2,
        post_attention_groups=2,
        intermediate_groups=2,
        output_groups=2,
    ),
    "deberta": dict(pooler_hidden_size=16),
    "deberta-v2": dict(pooler_hidden_size=16),
    "luke": dict(entity_vocab_size=4, entity_emb_size=16),
    "tapas": dict(),
    "mra": dict(max_position_embeddings=MAX_POSITIONS + 2),
    "rembert": dict(input_embedding_size=16, output_embedding_size=16),
    "xmod": dict(languages=["en_XX"], default_language="en_XX"),
    "roc_bert": dict(pronunciation_vocab_size=8, shape_vocab_size=8, pronunciation_embed_dim=8, shape_embed_dim=8),
}


DROP = {"funnel": ("num_hidden_layers",)}

# vision-language masked LMs: a tiny text model of the family named here and a tiny vision tower
NESTED = {"modernvbert": "modernbert", "ultravbert": "ultrabert"}
TINY_VISION = dict(
    model_type="siglip_vision_model",
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    image_size=8,
    patch_size=4,
)

# layouts beyond an architecture's default, tested as their own rows: name -> (model_type, config fields)
VARIANTS = {
    "esm-absolute": ("esm", dict(position_embedding_type="absolute")),  # ESM-1b's layout
}

# not built here, and why
NOT_BUILT: dict[str, str] = {}


def tiny_config(model_type: str):
    """The config of a tiny ``model_type`` (or of a ``VARIANTS`` name): TINY's fields the default config has,
    then SPECIAL's (then the variant's)."""
    from transformers import AutoConfig

    model_type, extra = VARIANTS.get(model_type, (model_type, {}))
    if model_type in NESTED:
        text = tiny_config(NESTED[model_type]).to_dict()
        return AutoConfig.for_model(
            model_type, text_config=text, vision_config=dict(TINY_VISION), pixel_shuffle_factor=2
        )
    default = AutoConfig.for_model(model_type)
    kwargs = {k: v for k, v in TINY.items() if hasattr(default, k) and k not in DROP.get(model_type, ())}
    kwargs.update(SPECIAL.get(model_type, {}))
    kwargs.update(extra)
    return AutoConfig.for_model(model_type, **kwargs)


def save_tokenizer(folder) -> None:
    import transformers

    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tok = transformers.BertTokenizer(str(folder / "vocab.txt"), do_lower_case=True, model_max_length=MAX_POSITIONS)
    tok.save_pretrained(str(folder))


def build(model_type: str, folder) -> str | None:
    """Save a tiny random ``model_type`` masked LM and its tokenizer in ``folder``; None, or why not."""
    return build_model(model_type, folder)[1]


def build_model(model_type: str, folder):
    """``build``, keeping the model: ``(model, None)``, the model as saved (eval mode), or ``(None, why)``
    when it cannot be built."""
    from transformers import AutoModelForMaskedLM

    if model_type in NOT_BUILT:
        return None, NOT_BUILT[model_type]
    try:
        cfg = tiny_config(model_type)
        torch.manual_seed(0)  # test fixture weights
        model = AutoModelForMaskedLM.from_config(cfg)
    except Exception as e:  # noqa: BLE001 - the reason is the result
        return None, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160] if str(e).strip() else ''}"
    with torch.no_grad():  # a zero-initialised bias would hide a head that drops it
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if "final_logits_bias" in name or name.endswith("lm_head.bias") or "decoder.bias" in name:
                t.copy_(torch.randn_like(t))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    save_tokenizer(folder)
    return model.eval(), None
