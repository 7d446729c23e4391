"""The input units of ``mlmprob variants``: one ``VariantUnit`` per input row, read from a ProteinGym-style table
(a ``mutant`` column such as ``A23C:D45E``), from full mutated sequences of the wild type's length, or generated
(every single mutant of the wild type: saturation). Units are checked against the wild type (``variant_of``) only
when scored (``VariantsJob.run``), so that ``--skip-invalid`` can count what it skips."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from ..alphabet import AMINO_ACIDS
from ..errors import MLMProbError
from ..runtime.inputs import detect_format, iter_records
from .mutations import Mutation, parse_mutant

SEQUENCE_COLUMNS = ("mutated_sequence", "sequence", "seq")


@dataclass(frozen=True)
class VariantUnit:
    """One row: ``id`` (the mutant string unless an id column names it), ``row`` (1-based data row of the input,
    for messages), and either the ``mutant`` string or the full mutated ``sequence``; ``label`` is the label
    column's text (``None`` without ``--label``)."""

    id: str
    row: int
    mutant: str | None = None
    sequence: str | None = None
    label: str | None = None


def read_wild_type(spec: str) -> str:
    """``--wild-type``: an existing FASTA/text file holding exactly one sequence, else the sequence itself (never
    taken for a path, however long). Residues are upper-case letters: lower case (often a placeholder such as
    ``na``) is refused, never silently upper-cased."""
    spec = spec.strip()
    if not spec:
        raise MLMProbError("--wild-type is empty")
    try:
        is_file = Path(spec).is_file()
    except (OSError, ValueError):  # a name the system cannot look up (too long) is not a file
        is_file = False
    if is_file:
        recs = list(islice(iter_records(spec), 2))
        if not recs or not recs[0].seq.strip():
            raise MLMProbError(f"--wild-type file {spec!r} holds no sequence")
        if len(recs) > 1:
            raise MLMProbError(
                f"--wild-type file {spec!r} holds more than one sequence ({recs[0].id!r}, "
                f"{recs[1].id!r}, ...); give a file with the wild type only"
            )
        seq, name = recs[0].seq.strip(), f"file {spec!r}"
    else:
        seq, name = spec, repr(spec[:40] + ("..." if len(spec) > 40 else ""))
    if not seq.isalpha():
        raise MLMProbError(f"--wild-type {name} is neither a file nor a sequence of residue letters")
    if not seq.isupper():
        raise MLMProbError(f"--wild-type {name} has lower-case letters; residues are upper-case letters")
    return seq


def variant_of(unit: VariantUnit, wild_type: str, offset: int = 1, alphabet: str = AMINO_ACIDS) -> tuple[Mutation, ...]:
    """The checked mutations of ``unit`` (errors name the row). A full sequence must have the wild type's length;
    its mutations are the positions where it differs (none for the wild type itself)."""
    row = f"{unit.row}" + (f" ({unit.id!r})" if unit.id != unit.mutant else "")
    where = f"row {row}"
    if unit.sequence is None:
        return parse_mutant(unit.mutant or "", wild_type, offset=offset, alphabet=alphabet, row=row)
    seq = unit.sequence.strip()
    if len(seq) != len(wild_type):
        raise MLMProbError(f"{where}: the sequence has {len(seq)} residues, the wild type {len(wild_type)}")
    out = []
    for i, (w, m) in enumerate(zip(wild_type, seq, strict=True)):
        if w != m:
            if m not in alphabet:
                raise MLMProbError(f"{where}: residue {m!r} at {i + offset} is not in the alphabet {alphabet}")
            out.append(Mutation(w, i, m))
    return tuple(out)


def mutant_label(mutations: tuple[Mutation, ...], offset: int = 1) -> str:
    """``A23C:D45E`` (empty for the wild type)."""
    return ":".join(m.label(offset) for m in mutations)


def saturation_units(wild_type: str, offset: int = 1, alphabet: str = AMINO_ACIDS) -> Iterator[VariantUnit]:
    """Every single mutant of ``wild_type`` to the letters of ``alphabet``, residue by residue."""
    n = 0
    for i, w in enumerate(wild_type):
        for m in alphabet:
            if m != w:
                n += 1
                name = f"{w}{i + offset}{m}"
                yield VariantUnit(name, n, mutant=name)


def _table_rows(path: Path, fmt: str) -> tuple[list[str], Iterator[dict]]:
    from ..runtime.inputs import _Lines

    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    lines = _Lines(path)
    reader = csv.DictReader(iter(lines), delimiter="," if fmt == "csv" else "\t")
    try:
        fields = list(reader.fieldnames or [])
    except csv.Error as e:
        raise MLMProbError(f"{path}: its header is not valid {fmt.upper()}: {e}") from None

    def rows():
        try:
            yield from reader
        except csv.Error as e:
            raise MLMProbError(f"{path}: line {lines.lineno} is not valid {fmt.upper()}: {e}") from None

    return fields, rows()


def iter_units(
    path: str | Path,
    *,
    fmt: str = "auto",
    mutant_column: str = "mutant",
    column: str | None = None,
    id_column: str | None = None,
    label: str | None = None,
) -> Iterator[VariantUnit]:
    """The units of an input file. A CSV/TSV with ``mutant_column`` gives mutant strings (ids: the mutant, or
    ``id_column``); otherwise sequences are read from ``column`` (default ``mutated_sequence``/``sequence``/``seq``),
    or from a FASTA/text/JSONL/Parquet file (its ids)."""
    path = Path(path)
    if path.is_dir():
        raise MLMProbError(f"input {str(path)!r} is a folder, not a file")
    if not path.is_file():
        raise MLMProbError(f"input file {str(path)!r} does not exist")
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt not in ("csv", "tsv"):
        if label is not None:
            raise MLMProbError(f"--label needs a CSV/TSV input, got a {fmt} file")
        for n, r in enumerate(iter_records(path, fmt, column, id_column), 1):
            yield VariantUnit(r.id, n, sequence=r.seq)
        return
    fields, rows = _table_rows(path, fmt)
    for c, what in ((column, "--column"), (id_column, "--id-column"), (label, "--label")):
        if c is not None and c not in fields:
            raise MLMProbError(f"{what} {c!r} is not a column of {path.name} (columns: {', '.join(fields)})")
    use_mutant = column is None and mutant_column in fields
    if not use_mutant:
        column = column or next((c for c in SEQUENCE_COLUMNS if c in fields), None)
        if column is None:
            raise MLMProbError(
                f"{path.name} has neither a {mutant_column!r} column nor a sequence column "
                f"({'/'.join(SEQUENCE_COLUMNS)}); columns: {', '.join(fields)}"
            )
    for n, row in enumerate(rows, 1):
        text = (row.get(mutant_column if use_mutant else column) or "").strip()
        rid = (row.get(id_column) or "").strip() if id_column else ""
        lab = row.get(label) if label else None
        if use_mutant:
            yield VariantUnit(rid or text or f"row{n}", n, mutant=text, label=lab)
        else:
            yield VariantUnit(rid or f"row{n}", n, sequence=text, label=lab)
