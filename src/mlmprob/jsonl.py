"""Result files written a line at a time (JSONL, TSV) and continued after a kill."""

from __future__ import annotations

import json
from pathlib import Path

from .errors import MLMProbError


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
