"""Streamed sequence inputs: text lines, FASTA, CSV/TSV, JSONL and Parquet, optionally gzip-compressed.

:func:`iter_records` yields one :class:`Record` at a time (one line or one Parquet batch in memory); a bad file is
one :class:`~mlmprob.errors.MLMProbError` line; an empty record, cell or value is a record with an empty sequence.
:func:`spool_input` makes standard input, a pipe or a FIFO readable more than once."""

from __future__ import annotations

import codecs
import csv
import gzip
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import defaults
from ..errors import MLMProbError

FORMATS = ("auto", "text", "fasta", "csv", "tsv", "jsonl", "parquet")
SEQ_KEYS = ("sequence", "seq")  # default sequence key of JSONL / Parquet when no column is named
ID_KEYS = ("id", "name")
_SUFFIXES = {s: "fasta" for s in ".fa .fasta .faa .fas .fna".split()} | {".csv": "csv", ".tsv": "tsv", ".tab": "tsv"}
_SUFFIXES |= {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True)
class Record:
    """One input sequence with an identifier (FASTA header, id column, or ``line<N>`` / ``row<N>``)."""

    id: str
    seq: str


def detect_format(path: str | Path) -> str:
    """The format named by the file's suffix (``.gz`` looked through)."""
    path = Path(path)
    path = path.with_suffix("") if path.suffix.lower() == ".gz" else path
    return _SUFFIXES.get(path.suffix.lower(), "text")


def decode_text(data: bytes, where: str, *, decoder=None, offsets: bool = False) -> str:
    """``data`` as UTF-8 text (a byte-order mark dropped; ``decoder``: an incremental ``utf-8-sig`` decoder), refused
    in one line naming ``where``, the byte and (``offsets``) its offset, when not UTF-8 or holding a NUL byte."""
    try:
        text = data.decode("utf-8-sig") if decoder is None else decoder.decode(data)
    except UnicodeDecodeError as e:
        at = f" at offset {e.start}" if offsets else ""
        raise MLMProbError(
            f"{where} is not UTF-8 text (byte 0x{data[e.start]:02x}{at}); is it a binary file?"
        ) from None
    if "\0" in text:
        at = f" at offset {data.index(0)}" if offsets else ""
        raise MLMProbError(f"{where} holds a NUL byte{at}; is it a binary file?")
    return text


class _Lines:
    """Decoded lines of a (possibly gzip) text file, with the line number for errors; a line longer than
    :data:`mlmprob.defaults.MAX_INPUT_LINE` bytes is refused (never read whole)."""

    def __init__(self, path: Path):
        self.path, self.lineno = path, 0

    def __iter__(self) -> Iterator[str]:
        with self.path.open("rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
        raw = gzip.open(self.path, "rb") if gzipped else self.path.open("rb")
        decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        cap = defaults.MAX_INPUT_LINE
        try:
            with raw:
                for self.lineno, line in enumerate(iter(lambda: raw.readline(cap + 1), b""), 1):
                    if len(line) > cap:
                        raise MLMProbError(
                            f"{self.path}: line {self.lineno} is longer than {cap:,} bytes, the most one line of an "
                            "input may hold (no sequence is that long); is it the right file?"
                        )
                    yield decode_text(line, f"{self.path}: line {self.lineno}", decoder=decoder)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise MLMProbError(f"{self.path}: cannot read it: {e}") from None


def iter_records(
    path: str | Path, fmt: str = "auto", column: str | None = None, id_column: str | None = None
) -> Iterator[Record]:
    """Stream the sequences of ``path``; blank lines of a text file are skipped, an empty cell (or FASTA
    record) is a record with an empty sequence.

    ``fmt``: ``auto`` (by suffix), ``text`` (one sequence per line, ids ``line<N>``), ``fasta``,
    ``csv``/``tsv`` (need ``column``; ids from ``id_column`` or ``row<N>``), ``jsonl`` and ``parquet``
    (sequence from ``column``, default ``sequence``/``seq``; ids from ``id_column``, default
    ``id``/``name``, else ``row<N>``). ``-`` reads standard input (see :func:`spool_input`).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "a.fasta"
    >>> _ = p.write_text(">x desc\\nAC\\nDE\\n>y\\nKL\\n")
    >>> list(iter_records(p))
    [Record(id='x', seq='ACDE'), Record(id='y', seq='KL')]
    """
    if fmt not in FORMATS:
        raise MLMProbError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if str(path) == "-" or _names_a_descriptor(str(path)):  # stdin: read once (commands spool it first)
        path, fmt = spool_input(path, fmt)
    path = Path(path)
    if not path.exists():
        raise MLMProbError(f"input file {str(path)!r} does not exist")
    if path.is_dir():
        raise MLMProbError(f"input {str(path)!r} is a folder, not a file")
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "parquet":
        return _parquet(path, column, id_column)
    lines = _Lines(path)
    if fmt == "text":
        return (Record(f"line{lines.lineno}", line.strip()) for line in lines if line.strip())
    if fmt == "fasta":
        return fasta_records(lines, lambda: f"{lines.path}: line {lines.lineno}")
    if fmt == "jsonl":
        return _jsonl(lines, column, id_column)
    if column is None:
        header = next(iter(lines), "")
        cols = next(csv.reader([header], delimiter="," if fmt == "csv" else "\t"), [])
        raise MLMProbError(
            f"{path.name} is a table: name the sequence column with --column (columns: {', '.join(cols)})"
        )
    return _table(lines, "," if fmt == "csv" else "\t", column, id_column)


def read_records(
    path: str | Path, fmt: str = "auto", column: str | None = None, id_column: str | None = None
) -> list[Record]:
    """All records of ``path`` as a list (see :func:`iter_records`)."""
    return list(iter_records(path, fmt, column, id_column))


def fasta_records(lines: Iterable[str], where: Callable[[], str], unnamed: str = "record{}") -> Iterator[Record]:
    """FASTA records from text lines: ``>NAME ...`` starts a record (its id: the first word, or
    ``unnamed`` numbered from 1), the lines after it are joined; ``where()`` names the current line in
    the error for sequence before any header."""
    name: str | None = None
    chunks: list[str] = []
    n = size = 0
    for line in lines:
        line = line.strip()
        if line.startswith(">"):
            if name is not None:
                yield Record(name, "".join(chunks))
                n += 1
            name, chunks, size = line[1:].split()[0] if line[1:].strip() else unnamed.format(n + 1), [], 0
        elif line:
            if name is None:
                raise MLMProbError(f"{where()} holds sequence before any '>' header; not FASTA")
            size += len(line)
            if size > defaults.MAX_INPUT_LINE:
                raise MLMProbError(
                    f"{where()}: record {name!r} is longer than {defaults.MAX_INPUT_LINE:,} characters, the most "
                    "one record of an input may hold (no sequence is that long); is it the right file?"
                )
            chunks.append(line)
    if name is not None:
        yield Record(name, "".join(chunks))


def _table(lines: _Lines, delimiter: str, column: str, id_column: str | None) -> Iterator[Record]:
    csv.field_size_limit(defaults.MAX_INPUT_LINE)  # a quoted cell may span lines: bounded as a line is
    reader = csv.DictReader(lines, delimiter=delimiter)
    try:
        fields = reader.fieldnames or []
        for c in (column, id_column):
            if c is not None and c not in fields:
                raise MLMProbError(f"column {c!r} not in {lines.path.name} (columns: {', '.join(fields)})")
        for i, row in enumerate(reader):
            seq = (row.get(column) or "").strip()
            rid = (row.get(id_column) or "").strip() if id_column else ""
            yield Record(rid or f"row{i + 1}", seq)
    except csv.Error as e:
        raise MLMProbError(
            f"{lines.path}: line {lines.lineno} is not valid {'CSV' if delimiter == ',' else 'TSV'}: {e}"
        ) from None


def _pick(keys, wanted: str | None, defaults: tuple[str, ...], what: str, where: str, required: bool) -> str | None:
    if wanted is not None and wanted not in keys:
        raise MLMProbError(f"{what} {wanted!r} not in {where} (has: {', '.join(map(str, keys))})")
    found = wanted if wanted is not None else next((k for k in defaults if k in keys), None)
    if found is None and required:
        raise MLMProbError(
            f"{where} has no {'/'.join(defaults)} field: name the sequence with --column "
            f"(has: {', '.join(map(str, keys))})"
        )
    return found


def _jsonl(lines: _Lines, column, id_column) -> Iterator[Record]:
    for line in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise MLMProbError(f"{lines.path}: line {lines.lineno} is not valid JSON: {e.msg}") from None
        except RecursionError:  # 100,000 nested brackets: the parser's own limit, no traceback
            raise MLMProbError(
                f"{lines.path}: line {lines.lineno} is nested too deeply to read as JSON (a record is one flat object)"
            ) from None
        except ValueError as e:  # an integer of more digits than Python converts, and the like
            raise MLMProbError(f"{lines.path}: line {lines.lineno} cannot be read as JSON: {e}") from None
        if not isinstance(obj, dict):
            raise MLMProbError(f"{lines.path}: line {lines.lineno} is not a JSON object")
        where = f"{lines.path.name} line {lines.lineno}"
        key = _pick(obj.keys(), column, SEQ_KEYS, "field", where, True)
        idk = _pick(obj.keys(), id_column, ID_KEYS, "field", where, False)
        seq = obj.get(key)
        if seq is not None and not isinstance(seq, str):
            raise MLMProbError(f"{where}: field {key!r} is not a string")
        rid = obj.get(idk) if idk else None
        yield Record(str(rid) if rid not in (None, "") else f"row{lines.lineno}", (seq or "").strip())


def _parquet(path: Path, column, id_column) -> Iterator[Record]:
    pq = _pyarrow_parquet()
    try:
        f = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises ArrowInvalid and OSError variants for non-Parquet files
        raise MLMProbError(
            f"{path}: not a Parquet file ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
        ) from None
    names = f.schema_arrow.names
    key = _pick(names, column, SEQ_KEYS, "column", path.name, True)
    idk = _pick(names, id_column, ID_KEYS, "column", path.name, False)
    cols = [key] + ([idk] if idk and idk != key else [])
    n = 0
    for batch in f.iter_batches(batch_size=4096, columns=cols):
        seqs = batch.column(key).to_pylist()
        ids = batch.column(idk).to_pylist() if idk else [None] * len(seqs)
        for seq, rid in zip(seqs, ids, strict=True):
            n += 1
            if seq is not None and not isinstance(seq, str):
                raise MLMProbError(f"{path.name} row {n}: column {key!r} is not a string")
            yield Record(str(rid) if rid not in (None, "") else f"row{n}", (seq or "").strip())


def _pyarrow_parquet():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MLMProbError("Parquet files need pyarrow: pip install pyarrow (or mlmprob[parquet])") from None
    return pq


def spool_input(path: str | Path, fmt: str = "auto") -> tuple[Path, str]:
    """``(path to read, format)``: a regular file or folder (or a missing path, for the reader to report) as it is;
    standard input (``-``), a pipe, a FIFO or a character device copied once per command to the temporary folder
    (:func:`mlmprob.runtime.spool.copy_of`). A stream with ``fmt="auto"`` gets its format from its name's suffix,
    else from its content (``>``: FASTA, ``{``: JSONL, Parquet's magic), else an error asks for ``--format``; so does
    a descriptor's name (``/dev/stdin``, ``/dev/fd/N``) standing for a regular file."""
    from .spool import copy_of

    given = str(path)
    if given != "-":
        p = Path(path)
        try:
            mode = p.stat().st_mode
        except OSError:
            return p, fmt
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            if fmt == "auto" and stat.S_ISREG(mode) and _names_a_descriptor(given):
                real = detect_format(os.path.realpath(given))
                fmt = real if real != "text" else _sniff(p, given)
            return p, fmt
    copy = copy_of(given)
    if fmt == "auto":
        named = detect_format(given) if given != "-" else "text"
        fmt = named if named != "text" else _sniff(copy, "standard input" if given == "-" else given)
    return copy, fmt


def _names_a_descriptor(given: str) -> bool:
    """Whether ``given`` names an open descriptor (``/dev/stdin``, ``/dev/fd/3``, ``/proc/self/fd/0``)."""
    return re.fullmatch(r"/dev/std(in|out|err)|/dev/fd/\d+|/proc/(self|\d+)/fd/\d+", os.path.abspath(given)) is not None


def _sniff(path: Path, name: str) -> str:
    """The format of a stream's content: Parquet's magic, ``>`` (FASTA) or ``{`` (JSONL) first; else an error."""
    with path.open("rb") as f:
        if f.read(4) == b"PAR1":
            return "parquet"
    first = next((line.lstrip() for line in _Lines(path) if line.strip()), "")
    if not first:
        raise MLMProbError(f"no sequences found in {name}: it is empty")
    fmt = {">": "fasta", "{": "jsonl"}.get(first[:1])
    if fmt is None:
        raise MLMProbError(
            f"{name}: cannot tell its format from a name or its content: give --format ({', '.join(FORMATS[1:])})"
        )
    return fmt
