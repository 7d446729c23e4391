"""The longest input a Hugging Face masked LM reads, found from the model itself (not a list of names).

A learned position table of ``N`` rows (``position_embeddings`` / ``embed_positions``) is read at ``offset + t``
for token ``t``; the offset (0 for BERT, ``padding_idx + 1`` for RoBERTa, 2 for BART, ...) is measured by one
forward with a hook finding the row the last token read, else declared by the table. The limit is the smallest of
each table's ``N - offset``, the config's ``max_position_embeddings`` (not for rotary positions) and the tokenizer's
``model_max_length``; none of these means no limit."""

from __future__ import annotations

from typing import cast

import torch

TABLE_NAMES = ("position_embeddings", "embed_positions")
PROBE_TOKENS = 4


def text_config(model):
    """``model``'s config, or its ``text_config`` for a vision-language masked LM (ModernVBERT, UltraVBERT)."""
    cfg = model.config
    get = getattr(cfg, "get_text_config", None)
    return get() if callable(get) else cfg


def position_tables(model) -> list[tuple[str, torch.nn.Module]]:
    """The learned absolute position tables of ``model``: modules named as :data:`TABLE_NAMES` with a 2-D weight."""
    tables = ((n, m) for n, m in model.named_modules() if n.rsplit(".", 1)[-1] in TABLE_NAMES)
    return [(n, m) for n, m in tables if isinstance(w := getattr(m, "weight", None), torch.Tensor) and w.dim() == 2]


def declared_offset(table: torch.nn.Module) -> int:
    """The offset a table declares: BART's ``offset``, else ``padding_idx + 1`` (RoBERTa's positions start after its
    padding row), else 0."""
    offset = getattr(table, "offset", None)
    if isinstance(offset, int):
        return offset
    pad = getattr(table, "padding_idx", None)
    return 0 if pad is None else int(pad) + 1


def _ordinary_id(model, avoid) -> int:
    """A token id that is not padding (RoBERTa-style position ids skip padding tokens)."""
    cfg = text_config(model)
    avoid = {a for a in avoid if a is not None} | {getattr(cfg, "pad_token_id", None)}
    vocab = int(getattr(cfg, "vocab_size", None) or model.get_input_embeddings().weight.shape[0])
    return next(i for i in range(vocab) if i not in avoid)


@torch.inference_mode()
def measured_offsets(model, tables, token: int, k: int = PROBE_TOKENS) -> dict[str, int]:
    """``name -> offset`` of each table whose read row could be measured on one forward of ``k`` tokens."""
    seen: dict[str, int] = {}

    def hook(name, table):
        def record(_module, _args, output):
            out = output[0] if isinstance(output, (tuple, list)) else output
            w = table.weight
            if not isinstance(out, torch.Tensor) or out.dim() < 2 or out.shape[-1] != w.shape[-1]:
                return
            rows = out.reshape(-1, w.shape[-1])
            if rows.shape[0] != k:  # not one row per token of the probe: not a lookup of its positions
                return
            hit = (w == rows[-1].to(w.dtype)).all(-1).nonzero().flatten()
            if len(hit) == 1 and 0 <= int(hit[0]) - (k - 1) < w.shape[0]:
                seen.setdefault(name, int(hit[0]) - (k - 1))

        return record

    handles = [t.register_forward_hook(hook(n, t)) for n, t in tables]
    try:
        model(input_ids=torch.full((1, k), token, dtype=torch.long, device=next(model.parameters()).device))
    except Exception:  # noqa: BLE001 - a model that needs more than ids: fall back to the declared offsets
        return {}
    finally:
        for h in handles:
            h.remove()
    return seen


def max_length_of(model, tokenizer=None) -> int | None:
    """The longest row (special tokens included) ``model`` reads, or None (see the module doc)."""
    cfg = text_config(model)
    n = getattr(cfg, "max_position_embeddings", None)
    if getattr(cfg, "position_embedding_type", "absolute") == "rotary":
        n = None
    tables = position_tables(model)
    if tables:
        avoid = [getattr(t, "padding_idx", None) for _, t in tables] + [getattr(tokenizer, "pad_token_id", None)]
        measured = measured_offsets(model, tables, _ordinary_id(model, avoid))
        for name, table in tables:
            rows = int(cast(torch.Tensor, table.weight).shape[0]) - measured.get(name, declared_offset(table))
            n = rows if n is None else min(int(n), rows)
    tmax = getattr(tokenizer, "model_max_length", None)
    if tmax is not None and tmax < 1_000_000:
        n = tmax if n is None else min(n, tmax)
    return None if n is None else int(n)
