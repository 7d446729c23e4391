"""The cells of a TSV output (:class:`mlmprob.runtime.writers.LineWriter`): an id it can keep as it is, and
one cell of text for any value."""

from __future__ import annotations

import math

from ..errors import MLMProbError
from ..jsonl import dumps


def check_tsv_id(rid) -> None:
    """Refuse an id a TSV row cannot keep as it is (a tab or a line break): its cell would be changed and the
    row would not match its record on ``--resume``.

    >>> check_tsv_id("a b")
    >>> check_tsv_id("a\\tb")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: id 'a\\tb' holds a tab or line break, which a TSV output cannot keep (--resume would
    not find it): write .jsonl or .parquet
    """
    if isinstance(rid, str) and any(c in rid for c in "\t\n\r"):
        raise MLMProbError(
            f"id {rid!r} holds a tab or line break, which a TSV output cannot keep (--resume would "
            "not find it): write .jsonl or .parquet"
        )


def tsv_cell(v) -> str:
    """One TSV cell: empty for None and non-finite floats, lists and nested values as strict JSON text
    (a Parquet output keeps them as lists and structs; JSONL as JSON), tabs and newlines as spaces.

    >>> tsv_cell(None), tsv_cell(float("nan")), tsv_cell(1.5), tsv_cell(["A", 2, float("inf")]), tsv_cell({"k": [1]})
    ('', '', '1.5', '["A", 2, null]', '{"k": [1]}')
    """
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, (list, tuple, dict)):
        return dumps(v)
    return str(v).replace("\t", " ").replace("\n", " ")
