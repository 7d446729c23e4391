"""The gap parser: how a gap is written in a record's text, read without a model.

A gap is written as ``[MASK]x5`` (five masked tokens), ``[MASK]`` / ``<mask>`` (one each, any case) or ``_`` (one
each), e.g. ``EVQLVESGGG_____QPGGSLRLSCAAS``. Masked tokens apart only by whitespace are one gap."""

from __future__ import annotations

import re

from . import defaults
from .errors import MLMProbError

_GAP_RE = re.compile(r"(\[MASK\]|<mask>)(?:\s*[xX*]\s*(\d+))?", re.IGNORECASE)


def gap_tokens(text: str, limit: int | None = None) -> int:
    """How many masked tokens the gaps of ``text`` hold, counted without writing them out; a count below 1, or
    more than ``limit`` (the model's maximum length) or than :data:`mlmprob.defaults.MAX_INPUT_LINE` (any
    input's longest line), is refused in one line before anything is built."""
    most = defaults.MAX_INPUT_LINE
    cap, total = most if limit is None else min(limit, most), 0
    reads = "any input holds" if limit is None or limit > most else "the model reads"
    for m in _GAP_RE.finditer(text):
        digits = (m.group(2) or "1").lstrip("0") or "0"
        n = int(digits) if len(digits) <= 18 else cap + 1  # 5,000 digits: more than Python's int() converts
        if n < 1:
            raise MLMProbError(f"a gap of {n} tokens ({m.group(0)!r}); use a positive count")
        if n > cap:
            shown = f"{n:,}" if len(digits) <= 18 else f"a {len(digits):,}-digit number of"
            raise MLMProbError(
                f"a gap of {shown} tokens ({m.group(0)[:40]!r}) is longer than {reads} ({cap:,} tokens at most)"
            )
        total += n
    total += _GAP_RE.sub("", text).count("_")
    if total > cap:
        raise MLMProbError(f"the gaps hold {total:,} masked tokens, more than {reads} ({cap:,} tokens at most)")
    return total


def expand_gaps(text: str, mask_text: str = "_", limit: int | None = None) -> str:
    """Write every gap of ``text`` as ``mask_text`` repeated once per masked token; the count is checked first
    (:func:`gap_tokens`, ``limit``: the model's maximum length)."""
    gap_tokens(text, limit)
    return _GAP_RE.sub(lambda m: "\0" * int(m.group(2) or 1), text).replace("_", "\0").replace("\0", mask_text)


def count_gaps(text: str) -> int:
    """How many contiguous gaps ``text`` holds (masked tokens apart only by whitespace are one gap); the gaps'
    sizes are checked (:func:`gap_tokens`) but not written out."""
    gap_tokens(text)
    return len(re.findall(r"\0(?:\s*\0)*", _GAP_RE.sub("\0", text).replace("_", "\0")))
