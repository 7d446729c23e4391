"""Sequence files (re-exported from :mod:`mlmprob.runtime.inputs`, which streams them) and the shared data folder."""

from __future__ import annotations

import os
from pathlib import Path

from .runtime.inputs import FORMATS, Record, detect_format, iter_records, read_records

__all__ = ["FORMATS", "Record", "detect_format", "iter_records", "read_records", "shared_data_dir"]


def shared_data_dir() -> Path | None:
    """The shared data folder: ``$MLMPROB_DATA``, else ``../shared/data`` from the working directory
    or from the source checkout; None if none exists."""
    env = os.environ.get("MLMPROB_DATA")
    cands = [Path(env)] if env else []
    here = Path(__file__).resolve()
    cands += [Path.cwd() / ".." / "shared" / "data", Path.cwd() / "shared" / "data"]
    cands += [p / "shared" / "data" for p in here.parents]
    for c in cands:
        if c.is_dir():
            return c.resolve()
    return None
