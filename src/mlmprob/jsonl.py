"""Result files written a line at a time (JSONL, TSV) and continued after a kill; strict JSON.

Every JSON text mlmprob writes goes through ``dumps``: NaN and infinities become ``null`` (strict
JSON has no such numbers), numpy and torch scalars become Python numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .errors import MLMProbError


def json_safe(obj):
    """``obj`` with NaN/inf floats replaced by None, recursively through dicts, lists and tuples;
    numpy/torch scalars become Python numbers and arrays/tensors lists.

    >>> import torch
    >>> json_safe({"a": float("nan"), "b": [1.5, float("-inf"), (torch.tensor(2.0), torch.tensor([1, 2]))]})
    {'a': None, 'b': [1.5, None, [2.0, [1, 2]]]}
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if getattr(obj, "ndim", None) == 0 and hasattr(obj, "item"):   # numpy / torch scalar
        return json_safe(obj.item())
    if hasattr(obj, "tolist") and hasattr(obj, "ndim"):             # numpy array / torch tensor
        return json_safe(obj.tolist())
    if hasattr(obj, "item") and hasattr(obj, "dtype"):              # other numpy scalar types
        return json_safe(obj.item())
    return obj


def dumps(obj, **kw) -> str:
    """``json.dumps`` of ``json_safe(obj)`` with ``allow_nan=False``: always strict JSON.

    >>> dumps({"ess": float("nan"), "n": 3})
    '{"ess": null, "n": 3}'
    """
    return json.dumps(json_safe(obj), allow_nan=False, **kw)


def trim_partial_line(path: Path) -> str:
    """Drop a half-written last line (one without its newline, left by a kill) from ``path`` and
    return the text kept; ``""`` when the file does not exist.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = p.write_text('{"a": 1}\\n{"a": ')
    >>> trim_partial_line(p), p.read_text()
    ('{"a": 1}\\n', '{"a": 1}\\n')
    """
    if not path.exists():
        return ""
    text = path.read_text()
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
        path.write_text(text)
    return text


def read_jsonl(path: Path) -> list:
    r"""The JSON values of a JSONL file, one per non-blank line; ``[]`` when the file does not exist.

    A last line without its newline that is not valid JSON was cut short by a kill and is skipped;
    an invalid line anywhere else means the file is damaged, and is an error naming the line.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "r.jsonl"
    >>> _ = p.write_text('{"a": 1}\n\n{"a": 2}\n{"a": ')
    >>> read_jsonl(p)
    [{'a': 1}, {'a': 2}]
    >>> _ = p.write_text('{"a": 1}\n{"a": \n{"a": 2}\n')
    >>> read_jsonl(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: ...r.jsonl line 2 is not valid JSON (the file is damaged): {"a":
    """
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) and not text.endswith("\n"):
                continue
            raise MLMProbError(f"{path} line {i} is not valid JSON (the file is damaged): {line.strip()[:80]}") from None
    return out
