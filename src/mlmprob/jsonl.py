"""Result files written a line at a time (JSONL, TSV) and continued after a kill."""

from __future__ import annotations

from pathlib import Path


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
