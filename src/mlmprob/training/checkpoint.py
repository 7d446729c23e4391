"""Checkpoints: ``model.safetensors`` + ``config.json`` + tokenizer + ``optimizer.pt`` + ``trainer_state.json``.

A checkpoint directory is written under a temporary name and renamed when complete, so a kill never leaves a
half-written ``step-N``. The optimizer state (tensors and plain values only) is read with ``weights_only=True``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import torch

from ..errors import ModelLoadError
from ..jsonl import dumps
from ..runtime.safefs import refuse_link, replace_file

STATE_FILE = "trainer_state.json"
OPTIMIZER_FILE = "optimizer.pt"
_STEP_DIR = re.compile(r"^step-(\d+)$")


def save_model_dir(path: Path, model, tokenizer, state: dict, optimizer=None) -> None:
    """Write a loadable model directory (``load_mlm(path)`` works) with the trainer state. The state file
    is written last and atomically (temporary name, then rename): it is whole or absent."""
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path), safe_serialization=True)
    tokenizer.save_pretrained(str(path))
    if optimizer is not None:
        torch.save(optimizer.state_dict(), path / OPTIMIZER_FILE)
    replace_file(path / STATE_FILE, dumps(state, indent=1), what="the trainer state")  # via a new STATE.tmp


def save_checkpoint(out_dir: Path, step: int, model, tokenizer, optimizer, state: dict, keep: int) -> Path:
    root = Path(out_dir) / "checkpoints"
    final = root / f"step-{step:08d}"
    tmp = root / f".tmp-step-{step:08d}"
    for p in (root, tmp, final):  # never written or deleted through a symbolic link
        refuse_link(p, "this checkpoint folder")
    if tmp.exists():
        shutil.rmtree(tmp)
    save_model_dir(tmp, model, tokenizer, state, optimizer)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    for old in list_checkpoints(out_dir)[:-keep]:
        shutil.rmtree(old)
    return final


def list_checkpoints(out_dir: Path) -> list[Path]:
    """Complete checkpoint directories, oldest first."""
    root = Path(out_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [
        (int(m.group(1)), p)
        for p in root.iterdir()
        if (m := _STEP_DIR.match(p.name)) and not p.is_symlink() and (p / STATE_FILE).is_file()
    ]
    return [p for _, p in sorted(found)]


def latest_checkpoint(out_dir: Path) -> Path | None:
    return [None, *list_checkpoints(out_dir)][-1]


def read_state(path: Path) -> dict:
    return json.loads((Path(path) / STATE_FILE).read_text())


def load_optimizer_state(path: Path) -> dict:
    """The optimizer state saved in checkpoint ``path``, read with ``torch.load(weights_only=True)``; a file
    that unpickler refuses (a pickle that asks for more than tensors and plain data, or no pickle at all) is
    one line naming it (:class:`mlmprob.errors.ModelLoadError`); no option loads it otherwise."""
    from ..models.weights import load_pickle

    path = Path(path)
    hint = (
        f"the optimizer.pt mlmprob writes holds only tensors and plain data; remove the checkpoint {path} to "
        "resume from an earlier one, or train into another --out"
    )
    state = load_pickle(path / OPTIMIZER_FILE, hint, what="optimizer state")
    if not isinstance(state, dict):
        raise ModelLoadError(f"{path / OPTIMIZER_FILE} holds a {type(state).__name__}, not an optimizer state; {hint}")
    return state
