"""Readers for sequence files: plain text lines, FASTA, CSV/TSV columns; and the shared data folder."""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import MLMProbError

FORMATS = ("auto", "text", "fasta", "csv", "tsv")


@dataclass(frozen=True)
class Record:
    """One input sequence with an identifier (FASTA header, id column, or ``line<N>``)."""

    id: str
    seq: str


def detect_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".fa", ".fasta", ".faa", ".fas"):
        return "fasta"
    if suffix == ".csv":
        return "csv"
    if suffix == ".tsv":
        return "tsv"
    return "text"


def read_records(path: str | Path, fmt: str = "auto", column: str | None = None,
                 id_column: str | None = None) -> list[Record]:
    """Read sequences from ``path``. Blank lines and empty CSV cells are skipped.

    ``fmt`` is ``auto`` (by extension), ``text`` (one sequence per line), ``fasta``, ``csv`` or
    ``tsv``; the last two need ``column`` (and take ``id_column`` for identifiers).
    """
    path = Path(path)
    if not path.exists():
        raise MLMProbError(f"input file {str(path)!r} does not exist")
    if fmt not in FORMATS:
        raise MLMProbError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "text":
        return [Record(f"line{i + 1}", line.strip()) for i, line in enumerate(path.read_text().splitlines())
                if line.strip()]
    if fmt == "fasta":
        return _read_fasta(path)
    return _read_table(path, "," if fmt == "csv" else "\t", column, id_column)


def _read_fasta(path: Path) -> list[Record]:
    records, name, chunks = [], None, []
    for i, line in enumerate(path.read_text().splitlines()):
        line = line.strip()
        if line.startswith(">"):
            if name is not None:
                records.append(Record(name, "".join(chunks)))
            name, chunks = line[1:].split()[0] if line[1:].strip() else f"record{len(records) + 1}", []
        elif line:
            if name is None:
                raise MLMProbError(f"{path}: line {i + 1} holds sequence before any '>' header; not FASTA")
            chunks.append(line)
    if name is not None:
        records.append(Record(name, "".join(chunks)))
    return records


def _read_table(path: Path, delimiter: str, column: str | None, id_column: str | None) -> list[Record]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        fields = reader.fieldnames or []
        if column is None:
            raise MLMProbError(f"{path.name} is a table: name the sequence column with --column "
                               f"(columns: {', '.join(fields)})")
        for c in (column, id_column):
            if c is not None and c not in fields:
                raise MLMProbError(f"column {c!r} not in {path.name} (columns: {', '.join(fields)})")
        out = []
        for i, row in enumerate(reader):
            seq = (row.get(column) or "").strip()
            if seq:
                rid = (row.get(id_column) or "").strip() if id_column else ""
                out.append(Record(rid or f"row{i + 1}", seq))
        return out


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
