"""``load_mlm``: built-in names, local Hugging Face directories, or hub ids."""

from __future__ import annotations

from pathlib import Path

import torch

from ..errors import ModelLoadError
from .hf import HFMaskedLM, _max_length_of
from .protein import protein_mlm
from .windowed import WindowedMLM
from .tokenizers import HFTokenizer
from ..runtime.device import resolve_device, resolve_dtype

BUILTIN = ("antiberty", "sapiens-vh", "sapiens-vl", "en-small")

EN_SMALL_DIR = Path(__file__).resolve().parent / "weights" / "en-small"


def parse_dtype(dtype, device="cpu") -> torch.dtype | None:
    """A dtype name (``auto``, ``bf16``, ``float32``, ...) or ``torch.dtype``; None keeps the weights' dtype."""
    return resolve_dtype(dtype, device)


def parse_device(device) -> torch.device:
    """A torch device string, or ``auto`` (CUDA, else MPS, else CPU)."""
    return resolve_device(device)


def load_mlm(name_or_path: str, device="auto", dtype=None, alphabet: str | None = None) -> HFMaskedLM | WindowedMLM:
    """Load a masked LM with its tokenizer.

    ``name_or_path`` is a built-in name (``"antiberty"``, ``"sapiens-vh"``, ``"sapiens-vl"``, and
    ``"en-small"``, the package's own small English BERT; all offline), a local directory saved with ``save_pretrained``, or a Hugging Face hub id such as
    ``"bert-base-cased"`` (needs internet). ``device`` is a torch device or ``"auto"`` (CUDA, else MPS, else
    CPU); ``dtype`` is a ``torch.dtype``, a name like ``"bf16"``, ``"auto"`` (chosen by the hardware, see
    :mod:`mlmprob.runtime.device`) or None (the weights' own dtype, float32 for the built-in models).
    Protein models (ESM, ProtBERT, ...) are recognised by their tokenizer, or by ``alphabet`` (the
    letters they may propose, default the 20 canonical residues): see ``mlmprob.models.protein``.
    """
    dev = parse_device(device)
    dt = parse_dtype(dtype, dev)
    key = str(name_or_path).lower()
    if alphabet is not None and key in BUILTIN:
        raise ModelLoadError(f"alphabet applies to hub and directory models; {key!r} has its own fixed alphabet")
    if key == "antiberty":
        from .antibody import load_antiberty
        return load_antiberty(dev, dt)
    if key in ("sapiens-vh", "sapiens-vl"):
        from .antibody import load_sapiens
        return load_sapiens(key.split("-")[1], dev, dt)
    if key == "en-small":
        if not (EN_SMALL_DIR / "model.safetensors").is_file():
            raise ModelLoadError(f"the en-small weights are missing from this installation ({EN_SMALL_DIR})")
        return load_hf(str(EN_SMALL_DIR), dev, dt, name="en-small")
    return load_hf(name_or_path, dev, dt, alphabet=alphabet)


def load_hf(name_or_path: str, device="cpu", dtype=None, *, name: str | None = None, alphabet: str | None = None) -> HFMaskedLM | WindowedMLM:
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # mlmprob's own progress goes to stderr; one bar at a time

    local = Path(name_or_path).expanduser()
    where = str(local) if local.exists() else str(name_or_path)
    try:
        tok = AutoTokenizer.from_pretrained(where)
        model = AutoModelForMaskedLM.from_pretrained(where)
    except (OSError, ValueError, KeyError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(
            f"cannot load {name_or_path!r}: not a built-in model ({', '.join(BUILTIN)}), and loading it as a "
            f"Hugging Face masked LM failed: {first}") from None
    model = model.to(device=device)
    if dtype is not None:
        model = model.to(dtype=dtype)
    max_len = _max_length_of(model, tok)
    protein = protein_mlm(model, tok, name=name or str(name_or_path), max_length=max_len, alphabet=alphabet)
    if protein is not None:
        return protein
    return HFMaskedLM(model, HFTokenizer(tok, max_length=max_len), name=name or str(name_or_path), max_length=max_len)
