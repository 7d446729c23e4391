"""Sequence files (re-exported from :mod:`mlmprob.runtime.inputs`, which streams them) and the shared data folder."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import TokenizationError
from .runtime.inputs import FORMATS, Record, detect_format, iter_records, read_records  # noqa: F401 - re-exported


def _why(e: TokenizationError) -> str:
    return str(e).replace("sequence 0 ", "", 1)


def encode_records(mlm, records: Sequence[Record]):
    """``mlm.encode`` of the records' sequences; a sequence the tokenizer refuses is named by its record."""
    try:
        return mlm.encode([r.seq for r in records])
    except TokenizationError:
        for r in records:  # find the offending record to name it
            try:
                mlm.encode([r.seq])
            except TokenizationError as e:
                raise TokenizationError(f"record {r.id!r}: {_why(e)}") from None
        raise


def encodable_records(
    mlm, records: Sequence[Record], on_skip: Callable[[Record, str], None] | None = None
) -> list[Record]:
    """The records the tokenizer accepts; ``on_skip(record, why)`` for each one it refuses."""
    good = []
    for r in records:
        try:
            mlm.encode([r.seq])
            good.append(r)
        except TokenizationError as e:
            if on_skip:
                on_skip(r, _why(e))
    return good


def shared_data_dir() -> Path | None:
    """The shared data folder: ``$MLMPROB_DATA``, else ``../shared/data`` of the working directory or checkout."""
    env = os.environ.get("MLMPROB_DATA")
    cands = [Path(env)] if env else []
    cands += [Path.cwd() / ".." / "shared" / "data", Path.cwd() / "shared" / "data"]
    cands += [p / "shared" / "data" for p in Path(__file__).resolve().parents]
    return next((c.resolve() for c in cands if c.is_dir()), None)
