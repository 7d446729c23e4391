"""The ``computed_with`` block of a run's stored configuration (added by :func:`~mlmprob.runtime.command.run_command`
and to ``sample``'s folder-mode header): what changes a value without being an option.

- ``dtype``: the resolved precision (``auto`` as this machine means it; ``weights`` by :func:`weights_dtype_text`);
- ``forward``: ``fused`` or ``transformers`` (``$MLMPROB_FUSED=0``, ``load_mlm(..., fused=False)``);
- ``model_path``: a local model folder's resolved absolute path;
- ``thread_invariant: false`` only when ``$MLMPROB_THREAD_INVARIANT=0`` (:mod:`mlmprob.runtime.threads`);
- ``batch_tokens``: the sub-batch budget, on a CPU (on a GPU only when given): it changes the last bits;
- ``int8_activations`` (8 or 7 bits, :func:`mlmprob.runtime.device.int8_reduce_range`), ``int8_float_layers``;
- ``threads`` (bfloat16/float16 on a CPU): the intra-op threads of each computing process (:func:`compute_threads`).

A resume or a ``merge`` whose block differs is refused naming the key; an output written before the block existed
is resumed without one (:func:`mlmprob.runtime.config_check.as_stored`)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from .. import defaults
from ..errors import MLMProbError

KEY = "computed_with"
_HALF = ("float16", "bfloat16")


def _dtype_text(dtype) -> str:
    return "weights" if dtype is None else str(dtype).replace("torch.", "")


def resolved_dtype(dtype_spec, devices: Sequence[str]) -> str:
    """What ``dtype_spec`` means on ``devices``, as text; an error when it means different precisions on
    them (``auto`` on ``cuda:0,cpu``: the rows of one output would mix precisions)."""
    from .device import resolve_device, resolve_dtype

    seen: dict[str, str] = {}
    for dev in dict.fromkeys(devices or ["auto"]):
        seen.setdefault(_dtype_text(resolve_dtype(dtype_spec, resolve_device(dev))), dev)
    if len(seen) > 1:
        means = " and ".join(f"{d} on {dev}" for d, dev in seen.items())
        raise MLMProbError(
            f"--dtype {dtype_spec} means {means}: one output would mix precisions; give --dtype explicitly"
        )
    return next(iter(seen))


def weights_dtype_text(model, devices: Sequence[str]) -> str:
    """What ``dtype="weights"`` (the default) means for ``model`` on ``devices``, read without loading it: float32
    for the built-in models; a local folder's ``config.json`` ``dtype`` or ``torch_dtype`` (float32 when absent),
    half precision widened to float32 on a CPU as :func:`mlmprob.models.precision.weights_dtype` does; ``weights``
    when unknown here (a hub id). So a resume with ``--dtype float32`` matches a run written with the default."""
    if str(model) in defaults.BUILTIN_MODELS:
        return "float32"
    if (cfg := _folder_config(model)) is None:
        return "weights"
    text = str(cfg.get("dtype") or cfg.get("torch_dtype") or "float32").replace("torch.", "")
    return "float32" if text in _HALF and _on_cpu(devices) else text


def _model_path(model) -> str | None:
    if not isinstance(model, (str, Path)) or not str(model):
        return None
    try:
        path = Path(model).expanduser()
        return str(path.resolve()) if path.is_dir() else None
    except OSError:
        return None


def _folder_config(model) -> dict | None:
    """The ``config.json`` of ``model`` when it is a local folder with a readable one; else None."""
    path = _model_path(model)
    try:
        cfg = None if path is None else json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return cfg if isinstance(cfg, dict) else None


def compute_threads(devices: Sequence[str], engine: str = "local") -> int:
    """The intra-op threads of each process computing a run on ``devices``: this process's (``--threads``) for one
    local device; ``cpu_count // len(devices)`` (at least 1) for the workers of several
    (:func:`mlmprob.runtime.pool.map_ordered`); 1 for Ray's actors (one CPU each)."""
    import torch

    if engine == "ray":
        return 1
    if len(devices) > 1:
        return max(1, (os.cpu_count() or 1) // len(devices))
    return torch.get_num_threads()


def computed_with(
    model,
    dtype_spec,
    devices: Sequence[str],
    *,
    batch_tokens: int | None = None,
    mlm=None,
    threads: int | None = None,
) -> dict:
    """The ``computed_with`` block (module docstring) of a run of ``model`` (a name, a folder or a hub id) in
    ``dtype_spec`` on ``devices`` with the sub-batch budget ``batch_tokens`` (None: the device's default) and
    ``threads`` per computing process (None: :func:`compute_threads`). ``mlm``: the model when already loaded
    (library use): its own dtype and forward are recorded."""
    from .device import fused_default, int8_float_layers, int8_reduce_range
    from .threads import enabled as thread_invariant

    fused = getattr(mlm, "fused", None)  # the model contract's (models/reader.py) or the adapter's answer
    if not isinstance(fused, bool):
        fused = fused_default()
    if mlm is not None:
        dtype = _dtype_text(getattr(mlm, "dtype", None))
    else:
        dtype = resolved_dtype(dtype_spec, devices)
        if dtype == "weights":
            dtype = weights_dtype_text(model, devices)
    block: dict[str, object] = {"dtype": dtype, "forward": "fused" if fused else "transformers"}
    if not thread_invariant():
        block["thread_invariant"] = False
    if (path := _model_path(model)) is not None:
        block["model_path"] = path
    cpu = _on_cpu(devices, mlm)
    if cpu or batch_tokens is not None:  # a GPU's default budget follows its free memory: not recorded
        block["batch_tokens"] = int(batch_tokens) if batch_tokens is not None else defaults.BATCH_TOKENS
    if dtype in _HALF and cpu:
        block["threads"] = int(threads) if threads is not None else compute_threads(devices)
    if dtype == "int8":
        block["int8_activations"] = 7 if int8_reduce_range() else 8
        if float_layers := int8_float_layers(_layer_count(model, mlm) or 0):
            block["int8_float_layers"] = float_layers  # int8 before 0.2.0 quantized every layer: not resumed under this
    return block


def _on_cpu(devices: Sequence[str], mlm=None) -> bool:
    """Whether the run computes on a CPU (the loaded ``mlm``'s device, else one of ``devices``)."""
    from .device import resolve_device

    if mlm is not None:
        return str(getattr(mlm, "device", "cpu")).startswith("cpu")
    return any(resolve_device(d).type == "cpu" for d in (devices or ["auto"]))


def _layer_count(model, mlm=None) -> int | None:
    """The encoder layers of the loaded ``mlm`` or the folder ``model``; None where unknown (built-in names, all
    under 12 layers; hub ids)."""
    cfg = getattr(getattr(mlm, "model", None), "config", None)
    if cfg is None:
        folder = _folder_config(model) or {}
        n = folder.get("num_hidden_layers", folder.get("n_layers"))
    else:
        n = getattr(cfg, "num_hidden_layers", getattr(cfg, "n_layers", None))
    return n if isinstance(n, int) else None
