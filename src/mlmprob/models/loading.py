"""``load_mlm``: built-in names, local Hugging Face directories, or hub ids."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..defaults import BUILTIN_MODELS, DEVICE, DTYPE
from ..errors import ModelLoadError
from ..runtime.device import resolve_device, resolve_dtype
from .hf import HFMaskedLM
from .length import max_length_of, text_config
from .precision import apply_precision
from .probe import check_at_load
from .protein import protein_mlm
from .reader import Reader
from .tokenizers import HFTokenizer
from .weights import check_safetensors, from_pretrained_checked, pickle_refusal_message, read_state, weight_files
from .windowed import WindowedMLM

BUILTIN = BUILTIN_MODELS

EN_SMALL_DIR = Path(__file__).resolve().parent / "weights" / "en-small"


parse_device = resolve_device  # a torch device string, or ``auto`` (CUDA, else MPS, else CPU)


def load_mlm(
    name_or_path: str,
    device=DEVICE,
    dtype=DTYPE,
    alphabet: str | None = None,
    *,
    allow_pickle: bool = False,
    fused: bool | None = None,
    batch_tokens: int | None = None,
) -> Reader:
    """Load a masked LM with its tokenizer, behind the model contract (:class:`mlmprob.models.reader.Reader`: its
    padding, head, device, dtype, budget, alphabet and length limit, found and checked once, here).

    ``name_or_path``: a built-in name (``"antiberty"``, ``"sapiens-vh"``, ``"sapiens-vl"``, ``"en-small"``, the
    package's own small English BERT; all offline), a local directory saved with ``save_pretrained``, or a hub id such
    as ``"bert-base-cased"`` (needs internet). ``device``: a torch device or ``"auto"`` (CUDA, else MPS, else CPU).
    ``dtype``: a ``torch.dtype`` or a name (``"float32"``, ``"bfloat16"``, ``"float16"``, ``"int8"``: the encoder's
    linear layers in int8 on x86 CPUs, :mod:`mlmprob.models.precision`), ``"auto"`` (the hardware's fast precision,
    :mod:`mlmprob.runtime.device`), or ``"weights"`` (the default; None means the same): the checkpoint's own dtype
    (float32 for every built-in model), except float32 for a half-precision checkpoint on a CPU
    (:func:`mlmprob.models.precision.weights_dtype`): the same numbers on every machine. Both default to
    :mod:`mlmprob.defaults`, as the CLI's ``--device``/``--dtype``. Protein models (ESM, ProtBERT, ...) are recognised
    by their tokenizer, or by ``alphabet`` (the letters they may propose, default the 20 canonical residues):
    :mod:`mlmprob.models.protein`. ESM-2, BERT and RoBERTa models run the fused forward (:mod:`mlmprob.models.fused`);
    ``fused=False`` (or ``$MLMPROB_FUSED=0`` when ``fused`` is None) runs transformers' own code. ``batch_tokens``:
    the forward budget of every read (tokens per sub-batch; None: the device's default,
    :func:`mlmprob.models.forward.auto_batch_tokens`); ``reader.with_budget(n)`` changes it later.

    Weights are read from safetensors files only. A local folder whose weights are a pickle (``pytorch_model.bin``,
    or shards named by either index) is refused unless ``allow_pickle=True``, and even then read with
    ``torch.load(..., weights_only=True)``, which runs no code; a weight file that is not what its name says, or
    weights whose shapes differ from ``config.json``, are one line (:mod:`mlmprob.models.weights`). Remote code
    (``trust_remote_code``) is never run."""
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    key = str(name_or_path).lower()
    mlm: HFMaskedLM | WindowedMLM
    if alphabet is not None and key in BUILTIN:
        raise ModelLoadError(f"alphabet applies to hub and directory models; {key!r} has its own fixed alphabet")
    if key in ("antiberty", "sapiens-vh", "sapiens-vl"):
        from .antibody import load_antiberty, load_sapiens

        chain = key.split("-")[-1]
        mlm = load_antiberty(dev, dt, fused=fused) if key == "antiberty" else load_sapiens(chain, dev, dt, fused=fused)
    elif key == "en-small":
        if not (EN_SMALL_DIR / "model.safetensors").is_file():
            raise ModelLoadError(f"the en-small weights are missing from this installation ({EN_SMALL_DIR})")
        mlm = load_hf(str(EN_SMALL_DIR), dev, dt, name="en-small", fused=fused)
    else:
        mlm = load_hf(name_or_path, dev, dt, alphabet=alphabet, allow_pickle=allow_pickle, fused=fused)
    return Reader(mlm, batch_tokens=batch_tokens)


def load_hf(
    name_or_path: str,
    device="cpu",
    dtype=None,
    *,
    name: str | None = None,
    alphabet: str | None = None,
    allow_pickle: bool = False,
    fused: bool | None = None,
) -> HFMaskedLM | WindowedMLM:
    """A Hugging Face ``*ForMaskedLM`` from a local folder or a hub id (weight files: see ``load_mlm``)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    local = Path(name_or_path).expanduser()
    if not local.exists() and looks_like_path(str(name_or_path)):
        raise ModelLoadError(
            f"cannot load {str(name_or_path)!r}: the model folder {name_or_path} does not exist "
            f"(and it is not a built-in model: {', '.join(BUILTIN)})"
        )
    if local.exists() and not local.is_dir():
        raise ModelLoadError(
            f"cannot load {str(name_or_path)!r}: it is a file; give the folder that holds the model's files"
        )
    weights = None
    if local.is_dir():
        check_model_folder(local)
        weights = weight_files(local)  # the files transformers would read, each inside the folder
        assert weights is not None  # check_model_folder refused a folder without weights
        if weights[0] == "pickle" and not allow_pickle:
            raise ModelLoadError(pickle_refusal_message(local, weights[1]))
        check_safetensors(weights[1])  # a readable safetensors header, or one line naming the file
    else:
        check_hub_index(str(name_or_path))
    where = str(local) if local.exists() else str(name_or_path)
    try:
        tok = AutoTokenizer.from_pretrained(where, trust_remote_code=False)
        if weights is not None and weights[0] == "pickle":
            model = _load_pickled(local, weights[1])
        else:  # safetensors only: a hub repo without them is refused by transformers
            model = from_pretrained_checked(
                AutoModelForMaskedLM, where, repr(str(name_or_path)), use_safetensors=True, trust_remote_code=False
            )
    except (OSError, ValueError, KeyError) as e:
        if isinstance(e, ModelLoadError):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if not local.exists() and "safetensors" in first:
            first = (
                "it has no safetensors weights, and mlmprob reads hub models from safetensors only "
                "(download it to a folder and pass that folder with --allow-pickle)"
            )
        raise ModelLoadError(
            f"cannot load {name_or_path!r}: not a built-in model ({', '.join(BUILTIN)}), and loading it as a "
            f"Hugging Face masked LM failed: {first}"
        ) from None
    model = apply_precision(model, device, dtype)
    max_len, name = max_length_of(model, tok), name or str(name_or_path)
    mlm = protein_mlm(model, tok, name=name, max_length=max_len, alphabet=alphabet, fused=fused)
    if mlm is None:
        hf_tok = HFTokenizer(tok, max_length=max_len, vocab_size=getattr(text_config(model), "vocab_size", None))
        mlm = HFMaskedLM(model, hf_tok, name=name, max_length=max_len, fused=fused)
    check_at_load(mlm)  # the head and padding shortcuts, verified on this model (models/probe.py)
    return mlm


TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
)


def looks_like_path(name: str) -> bool:
    """Whether a ``--model`` value is a path rather than a hub id (``owner/name`` or ``name``): it starts
    with ``/``, ``.`` or ``~``, ends with a separator, or has more than one ``/`` (or the system's separator)."""
    return (
        name.startswith(("/", ".", "~"))
        or name.endswith(("/", os.sep))
        or name.count("/") > 1
        or (os.sep != "/" and os.sep in name)
    )


def check_model_folder(folder: Path) -> None:
    """Refuse a local model folder that lacks the files of a Hugging Face model, naming what is missing."""
    missing = []
    if not (folder / "config.json").is_file():
        missing.append("config.json")
    if weight_files(folder) is None:
        missing.append("weights (model.safetensors, or pytorch_model.bin with --allow-pickle)")
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        missing.append(f"tokenizer files (one of {', '.join(TOKENIZER_FILES)})")
    if len(missing) == 3:
        raise ModelLoadError(
            f"cannot load model folder {folder}: it has no model or tokenizer files; expected "
            f"{', '.join(missing)} (as save_pretrained writes them)"
        )
    if missing:
        raise ModelLoadError(f"cannot load model folder {folder}: it lacks {' and '.join(missing)}")


def _load_pickled(folder: Path, files: list[Path]):
    """A masked LM from weight files of which some are pickles, each read with ``weights_only=True``."""
    from transformers import MODEL_FOR_MASKED_LM_MAPPING, AutoConfig

    state = read_state(files)
    config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    if type(config) not in MODEL_FOR_MASKED_LM_MAPPING:
        raise ModelLoadError(f"{folder}: model type {config.model_type!r} has no masked-LM class in transformers")
    return from_pretrained_checked(
        MODEL_FOR_MASKED_LM_MAPPING[type(config)], None, str(folder), config=config, state_dict=state
    )


def check_hub_index(repo: str) -> None:
    """Refuse a hub model whose ``model.safetensors.index.json`` names files that are not safetensors; a repo without
    the index, or one that cannot be reached, is left to transformers."""
    from transformers.utils import cached_file

    try:
        index = cached_file(
            repo,
            "model.safetensors.index.json",
            _raise_exceptions_for_missing_entries=False,
            _raise_exceptions_for_connection_errors=False,
        )
        names = set(json.loads(Path(index).read_text())["weight_map"].values()) if index else set()
    except Exception:  # no such repo, no network, a bad index: transformers' own load says so
        return
    pickles = sorted(n for n in names if not str(n).endswith(".safetensors"))
    if pickles:
        raise ModelLoadError(
            f"cannot load {repo!r}: its model.safetensors.index.json names {pickles[0]}, which is "
            "not a safetensors file, and mlmprob reads hub models from safetensors only (download "
            "it to a folder and pass that folder with --allow-pickle)"
        )
