"""The ``--data DIR`` option every experiment that reads data takes: the shared data folder, by default
the one ``mlmprob.data.shared_data_dir`` finds (``$MLMPROB_DATA``, else ``../shared/data``). Data that
is absent is one clear ``MLMProbError`` naming what is needed and the option, never a traceback.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from mlmprob.errors import MLMProbError


def add_data_option(parser: argparse.ArgumentParser, needs: str, *aliases: str) -> None:
    """Add ``--data DIR`` (and ``aliases``) to ``parser``, defaulting to the shared data folder found now
    (None when there is none: ``resolve_data_dir`` then says what to pass); ``needs`` says what it must hold."""
    from mlmprob.data import shared_data_dir

    found = shared_data_dir()
    parser.add_argument(
        "--data",
        *aliases,
        dest="data",
        metavar="DIR",
        default=None if found is None else str(found),
        help=f"the shared data folder, holding {needs} (default: %(default)s, found from "
        "$MLMPROB_DATA, else ../shared/data)",
    )


def resolve_data_dir(given: str | Path | None, needed: Sequence[str]) -> Path:
    """``given`` (else the shared data folder found automatically), checked to hold every path of
    ``needed`` (relative to it).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     resolve_data_dir(d, ["x.csv"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: .../x.csv not found: pass --data DIR, the folder holding x.csv
    """
    from mlmprob.data import shared_data_dir

    holding = ", ".join(needed)
    d = Path(given) if given is not None else shared_data_dir()
    if d is None:
        raise MLMProbError(
            f"no shared data folder found ($MLMPROB_DATA unset, no ../shared/data): pass --data DIR, "
            f"the folder holding {holding}"
        )
    if not d.is_dir():
        raise MLMProbError(f"data folder {d} does not exist: pass --data DIR, the folder holding {holding}")
    missing = [str(d / f) for f in needed if not (d / f).exists()]
    if missing:
        raise MLMProbError(f"{', '.join(missing)} not found: pass --data DIR, the folder holding {holding}")
    return d
