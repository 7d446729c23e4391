"""A model's weight files, checked before anything reads them, and read safely: those transformers reads with
``use_safetensors=True``, else the pickles ``pytorch_model.bin(.index.json)`` names, each inside the folder and
present; a pickle needs ``allow_pickle`` and is read with ``torch.load(weights_only=True)``; a safetensors file
needs a readable header; shapes must match ``config.json`` (:func:`from_pretrained_checked`). Each refusal is one
line (:class:`mlmprob.errors.ModelLoadError`)."""

from __future__ import annotations

import json
import logging
import os
import re
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch

from ..errors import ModelLoadError

SAFE_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
PICKLE_WEIGHTS = ("pytorch_model.bin.index.json", "pytorch_model.bin")
INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def weight_files(folder: Path) -> tuple[str, list[Path]] | None:
    """``(format, files)`` of a local model folder: ``"safetensors"`` when every weight file is one, else
    ``"pickle"``; None when it has no weights."""
    folder = Path(folder)
    for name in SAFE_WEIGHTS + PICKLE_WEIGHTS:
        if (folder / name).is_file():
            files = _indexed(folder, folder / name) if name in INDEXES else [folder / name]
            return ("safetensors" if all(f.name.endswith(".safetensors") for f in files) else "pickle"), files
    return None


def _indexed(folder: Path, index: Path) -> list[Path]:
    """The weight files ``index`` names, each checked to be a file inside ``folder``."""
    try:
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        if not names or not all(isinstance(n, str) for n in names):
            raise ValueError("it names no weight files")
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        why = "it has no weight_map" if isinstance(e, (KeyError, TypeError, AttributeError)) else _first_line(e)
        raise ModelLoadError(
            f"cannot load model folder {folder}: {index.name} is not a weights index ({why})"
        ) from None
    root, files = Path(os.path.abspath(folder)), []
    for n in names:  # by name: a shard linked elsewhere (a hub cache's snapshot folder) is the folder's own
        path = Path(os.path.normpath(root / n))
        if root not in path.parents:
            raise ModelLoadError(f"{index} names a weight file outside its folder: {n!r}")
        if not path.is_file():
            raise ModelLoadError(f"cannot load model folder {folder}: {index.name} names {n}, which is missing")
        files.append(path)
    return files


def check_safetensors(files) -> None:
    """Refuse a ``*.safetensors`` file whose header cannot be read (a pickle renamed, a torn download, ...)."""
    from safetensors import safe_open

    for f in files:
        if not str(f).endswith(".safetensors"):
            continue
        try:
            with safe_open(str(f), framework="pt") as handle:
                handle.keys()
        except Exception as e:  # safetensors raises its own error type (and OSError, ValueError) on a bad file
            raise ModelLoadError(f"cannot load {f}: it is not a safetensors file ({_first_line(e)})") from None


def pickle_refusal_message(folder: Path, files: list[Path]) -> str:
    """Why a folder whose weights include pickles is refused without ``allow_pickle``."""
    pickles = sorted({f.name for f in files if not f.name.endswith(".safetensors")})
    names = ", ".join(pickles[:3]) + (f" and {len(pickles) - 3} more" if len(pickles) > 3 else "")
    how = "only" if len(pickles) == len(files) else "partly"
    return (
        f"{folder} holds its weights {how} as a pickle ({names}), which can run code when loaded; convert "
        "it to safetensors, or pass --allow-pickle (API: allow_pickle=True) to read it with "
        "torch.load(weights_only=True)"
    )


def read_state(files: list[Path]) -> dict:
    """One state dict from weight files: safetensors, else ``torch.load(weights_only=True)`` (runs no code)."""
    from safetensors.torch import load_file

    state = {}
    for path in files:
        if path.name.endswith(".safetensors"):
            check_safetensors([path])
            part = load_file(str(path))
        else:
            part = load_pickle(path)
        if not isinstance(part, dict):
            raise ModelLoadError(f"{path} holds a {type(part).__name__}, not a state dict of tensors")
        state.update(part)
    return state


def load_pickle(
    path: Path, hint: str = "convert the weights to safetensors with a tool you trust", what: str = "weights file"
):
    """``torch.load(path, weights_only=True)``, or one line naming the file and what the weights-only unpickler
    refused; ``hint`` says what the user can do."""
    try:
        with warnings.catch_warnings():  # torch's notes on the pickle's protocol: not the user's concern
            warnings.simplefilter("ignore", UserWarning)
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # the weights-only unpickler refuses anything but tensors and plain data
        raise ModelLoadError(
            f"refused to load {path}: it is not a plain {what} ({pickle_refusal(e)}); "
            f"mlmprob never runs what a pickle asks for: {hint}"
        ) from None


def pickle_refusal(e: Exception) -> str:
    """What the weights-only unpickler objected to, in our words (never torch's advice to unpickle fully)."""
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(e))
    if found:
        return f"it refers to {found.group(1)}, which is not a tensor or plain data"
    if "weights_only" in str(e) or "Weights only" in str(e):
        return "it holds objects other than tensors and plain data"
    return f"{type(e).__name__}: {_first_line(e)}" if str(e).strip() else type(e).__name__


def from_pretrained_checked(cls, where, what: str, **kwargs):
    """``cls.from_pretrained(where, **kwargs)``, refusing weights whose shapes differ from the configuration's with
    one line naming the first such tensor; transformers' log records are let through only when the load succeeds."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # mlmprob's own progress goes to stderr; one bar at a time
    with _held_logs() as held:
        try:
            model = cls.from_pretrained(where, **kwargs)
        except RuntimeError as e:
            if isinstance(e, torch.OutOfMemoryError) or not re.search(r"mismatch|Error\(s\) in loading", str(e)):
                raise
            raise ModelLoadError(f"cannot load {what}: {_mismatch(cls, where, kwargs) or _first_line(e)}") from None
    for record in held:
        logging.getLogger("transformers").handle(record)
    return model


def _mismatch(cls, where, kwargs) -> str | None:
    """The shapes that differ, in words, from transformers' account of a second load (None: it has none)."""
    try:
        _, info = cls.from_pretrained(where, ignore_mismatched_sizes=True, output_loading_info=True, **kwargs)
    except Exception:  # the account is a courtesy; the first failure is reported either way
        return None
    bad = sorted(info.get("mismatched_keys") or (), key=lambda k: str(k[0]))
    if not bad:
        return None
    key, have, want = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return (
        f"its weights do not match its config.json: {key} has shape {list(have)} in the weight files but "
        f"{list(want)} by config.json{more}"
    )


@contextmanager
def _held_logs():
    """The records transformers logs inside the block (its load report among them), held back from its handlers: the
    caller emits them when the load succeeds."""
    held: list[logging.LogRecord] = []

    def hold(record):
        if not any(r is record for r in held):  # once, whichever handler saw it first
            held.append(record)
        return False

    handlers = list(logging.getLogger("transformers").handlers)
    for h in handlers:
        h.addFilter(hold)
    try:
        yield held
    finally:
        for h in handlers:
            h.removeFilter(hold)


def _first_line(e: Exception) -> str:
    """The first line of an exception's message (its type when it has none), at most 200 characters."""
    text = str(e).strip()
    return text.splitlines()[0][:200] if text else type(e).__name__
