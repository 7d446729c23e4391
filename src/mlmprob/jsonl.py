"""Strict JSON: every JSON text mlmprob writes goes through ``dumps``: NaN and infinities become ``null``, numpy
and torch scalars Python numbers. Files appended as a run goes (and their reader) are :mod:`mlmprob.runtime.log`."""

from __future__ import annotations

import json
import math


def json_safe(obj):
    """``obj`` with NaN/inf floats replaced by None, recursively through dicts, lists and tuples; numpy/torch
    scalars become Python numbers and arrays/tensors lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if getattr(obj, "ndim", None) == 0 and hasattr(obj, "item"):  # numpy / torch scalar
        return json_safe(obj.item())
    if hasattr(obj, "tolist") and hasattr(obj, "ndim"):  # numpy array / torch tensor
        return json_safe(obj.tolist())
    return json_safe(obj.item()) if hasattr(obj, "item") and hasattr(obj, "dtype") else obj  # other numpy scalars


def dumps(obj, **kw) -> str:
    """``json.dumps`` of ``json_safe(obj)`` with ``allow_nan=False``: always strict JSON."""
    return json.dumps(json_safe(obj), allow_nan=False, **kw)
