"""Result writers for every command that loops over independent units: JSONL, TSV or Parquet (by the
``--out`` suffix), or JSONL on stdout.

Every writer commits as it goes and resumes without loss:

- JSONL / TSV: each :meth:`ResultWriter.write` appends whole lines, flushes and ``fsync``s; a line
  cut by a kill is dropped on resume.
- Parquet: rows are committed in parts ``OUT.parts/part-NNNNNN.parquet`` (each written to a temporary
  name, then renamed: a part is either whole or absent) of ``part_rows`` rows; :meth:`close` with
  ``complete=True`` joins the parts into ``OUT``. A kill loses at most the part in flight.

A run holds ``OUT.lock`` (:class:`~mlmprob.runtime.lock.WriterLock`) while it writes, and keeps
``OUT.meta.json``: the run's configuration (a resumed run must match it), its shard, whether it
completed, and the ids it skipped; ``mlmprob merge`` reads it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Iterable

from ..errors import MLMProbError
from ..jsonl import dumps, json_safe  # noqa: F401 - re-exported
from .lock import WriterLock

OUTPUT_KINDS = (".jsonl", ".tsv", ".parquet")


def output_kind(path: str | Path | None) -> str:
    """``stdout``, ``jsonl``, ``tsv`` or ``parquet`` from ``--out``'s suffix (``.gz`` is not supported).

    >>> output_kind(None), output_kind("a/b.parquet"), output_kind("x.TSV")
    ('stdout', 'parquet', 'tsv')
    """
    if path is None or str(path) == "-":
        return "stdout"
    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_KINDS:
        raise MLMProbError(f"--out {str(path)!r}: use a .jsonl, .tsv or .parquet file")
    return suffix[1:]


class ResultWriter:
    """Base class: ``write(rows)`` commits rows (dicts with an ``id``), ``close(complete)`` ends the run."""

    kind = "stdout"

    def __init__(self, path: Path | None, *, fields: tuple[str, ...] | None = None):
        self.path, self.fields = path, fields
        self.rows_written = 0

    def done_ids(self) -> set[str]:
        """The ids the output held when it was opened (rows written since are not tracked: memory stays
        flat however long the run)."""
        return set()

    # -- public view of the stored meta (no caller reads the private state) -----------------------
    def skipped(self) -> list[list[str]]:
        """``[id, reason]`` of the units the output's earlier runs skipped (from ``OUT.meta.json``)."""
        return []

    def skipped_ids(self) -> set[str]:
        """The ids of :meth:`skipped`."""
        return {str(x[0]) for x in self.skipped()}

    def write(self, rows: list[dict]) -> None:
        for row in rows:
            sys.stdout.write(dumps(row) + "\n")
        sys.stdout.flush()
        self.rows_written += len(rows)

    def close(self, complete: bool = True, **meta) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(complete=False)


class _FileWriter(ResultWriter):
    def __init__(self, path: Path, *, resume: bool, config: dict | None, fields=None):
        super().__init__(path, fields=fields)
        self.meta_path = meta_path(path)
        self.lock = WriterLock(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        try:
            self._created = not self._exists()
            self._check_existing(resume, config)
            self._open(resume)
        except BaseException:
            self.lock.release()
            raise
        self._meta = {"config": config or {}, "complete": False, "skipped": self._old_meta().get("skipped", [])}
        self._write_meta()
        self._closed = False

    def skipped(self) -> list[list[str]]:
        return [list(x) for x in self._meta.get("skipped", [])]

    # -- state on disk ----------------------------------------------------------------------------
    def _exists(self) -> bool:
        return self.path.exists()

    def _old_meta(self) -> dict:
        return read_meta(self.path)

    def _check_existing(self, resume: bool, config: dict | None) -> None:
        if not self._exists():
            return
        if not resume:
            raise MLMProbError(f"{self.path} exists; pass --resume to continue it or choose another --out")
        old = self._old_meta().get("config")
        if old and config:
            k = config_mismatch(old, config)
            if k is not None:
                raise MLMProbError(f"cannot resume {self.path}: it was written with {k}={old.get(k)!r}, this run has "
                                   f"{k}={config.get(k)!r}; use the same options or another --out")

    def _write_meta(self) -> None:
        tmp = self.meta_path.with_name(self.meta_path.name + ".tmp")
        tmp.write_text(dumps(self._meta, indent=2) + "\n")
        os.replace(tmp, self.meta_path)

    def close(self, complete: bool = True, **meta) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._finish(complete)
            if not complete and self._created and self.rows_written == 0:
                self._discard()  # a run that failed before its first row leaves nothing behind
                return
            self._meta.update(meta)
            self._meta["complete"] = bool(complete)
            self._meta["rows"] = len(self.done_ids()) + self.rows_written if complete else None
            self._write_meta()
        finally:
            self.lock.release()

    def _discard(self) -> None:
        for p in (self.path, self.meta_path):
            p.unlink(missing_ok=True)
        shutil.rmtree(self.path.with_name(self.path.name + ".parts"), ignore_errors=True)

    def _open(self, resume: bool) -> None:
        raise NotImplementedError

    def _finish(self, complete: bool) -> None:
        raise NotImplementedError


class LineWriter(_FileWriter):
    """JSONL (one object a line) or TSV (``fields`` columns, header first)."""

    def __init__(self, path: Path, *, resume: bool, config: dict | None = None, fields=None):
        self.kind = "tsv" if path.suffix.lower() == ".tsv" else "jsonl"
        super().__init__(path, resume=resume, config=config, fields=fields)

    def _open(self, resume: bool) -> None:
        from ..jsonl import trim_partial_line

        text = trim_partial_line(self.path) if resume else ""
        self._done: set[str] = set()
        for i, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            if self.kind == "tsv":
                if i > 0:
                    self._done.add(line.split("\t", 1)[0])
            else:
                try:
                    self._done.add(str(json.loads(line)["id"]))
                except (json.JSONDecodeError, KeyError, TypeError):
                    raise MLMProbError(f"{self.path} line {i + 1} is damaged (not a result row); cannot resume it") from None
        self._fh = self.path.open("a", encoding="utf-8")
        self._header_needed = self.kind == "tsv" and not text.strip()
        if self.kind == "tsv" and not self._header_needed:
            self.fields = tuple(text.splitlines()[0].split("\t"))

    def done_ids(self) -> set[str]:
        return self._done

    def write(self, rows: list[dict]) -> None:
        if not rows:
            return
        if self.kind == "tsv":
            if self._header_needed:  # the columns: as given, else the first row's keys
                self.fields = tuple(self.fields or rows[0].keys())
                self._fh.write("\t".join(self.fields) + "\n")
                self._header_needed = False
            lines = ["\t".join(tsv_cell(r.get(k)) for k in self.fields) for r in rows]
        else:
            lines = [dumps(r) for r in rows]
        self._fh.write("\n".join(lines) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.rows_written += len(rows)

    def _finish(self, complete: bool) -> None:
        self._fh.close()


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


class ParquetWriter(_FileWriter):
    """Parquet in committed parts, joined into one file when the run completes."""

    kind = "parquet"

    def __init__(self, path: Path, *, resume: bool, config: dict | None = None, fields=None, part_rows: int = 1024):
        self.parts = path.with_name(path.name + ".parts")
        self.part_rows = part_rows
        super().__init__(path, resume=resume, config=config, fields=fields)

    def _exists(self) -> bool:
        return self.path.exists() or self.parts.exists()

    def _open(self, resume: bool) -> None:
        from .inputs import _pyarrow_parquet

        self._pq = _pyarrow_parquet()
        import pyarrow as pa

        self._pa = pa
        if self.path.exists() and self.parts.exists():
            shutil.rmtree(self.parts)  # the joined file was written last: it holds every part
        self.parts.mkdir(exist_ok=True)
        for tmp in self.parts.glob("*.tmp"):
            tmp.unlink()  # a part cut by a kill
        if self.path.exists():
            os.replace(self.path, self._part_name(0))
        self._done = set()
        for p in self._part_files():
            self._done.update(str(x) for x in self._pq.read_table(p, columns=["id"]).column("id").to_pylist())
        self._buf: list[dict] = []

    def _part_files(self) -> list[Path]:
        return sorted(self.parts.glob("part-*.parquet"))

    def _part_name(self, n: int) -> Path:
        return self.parts / f"part-{n:06d}.parquet"

    def done_ids(self) -> set[str]:
        return self._done

    def write(self, rows: list[dict]) -> None:
        self._buf.extend(json_safe(r) for r in rows)
        self.rows_written += len(rows)
        if len(self._buf) >= self.part_rows:
            self._commit()

    def _commit(self) -> None:
        if not self._buf:
            return
        files = self._part_files()
        n = int(files[-1].stem.split("-")[1]) + 1 if files else 0
        target = self._part_name(n)
        tmp = target.with_name(target.name + ".tmp")
        self._pq.write_table(self._pa.Table.from_pylist(self._buf), tmp)
        os.replace(tmp, target)
        self._buf = []

    def _finish(self, complete: bool) -> None:
        self._commit()
        if not complete:
            return
        files = self._part_files()
        schema = self._pa.unify_schemas([self._pq.read_schema(p) for p in files]) if files else self._pa.schema([])
        tmp = self.path.with_name(self.path.name + ".tmp")
        with self._pq.ParquetWriter(tmp, schema) as w:
            for p in files:
                w.write_table(self._pq.read_table(p).cast(schema))
        os.replace(tmp, self.path)
        shutil.rmtree(self.parts)


def meta_path(out: str | Path) -> Path:
    """``OUT.meta.json``: the file that keeps a run's configuration, shard, completion and skipped ids."""
    out = Path(out)
    return out.with_name(out.name + ".meta.json")


def read_meta(out: str | Path) -> dict:
    """The stored meta of the output ``out`` (``{}`` when it has none, or it is unreadable)."""
    try:
        return json.loads(meta_path(out).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def config_mismatch(old: dict, new: dict) -> str | None:
    """The first key (in sorted order) whose value differs between two stored configurations, else None.

    >>> config_mismatch({"a": 1, "b": 2}, {"a": 1, "b": 3}), config_mismatch({"a": 1}, {"a": 1})
    ('b', None)
    """
    diff = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return diff[0] if diff else None


def open_writer(out: str | Path | None, *, resume: bool = False, config: dict | None = None,
                fields: tuple[str, ...] | None = None, part_rows: int = 1024) -> ResultWriter:
    """The writer for ``--out`` (stdout JSONL when None). ``config`` is stored in ``OUT.meta.json`` and
    must match on ``--resume``; ``fields`` are the TSV columns; ``part_rows`` the rows of a Parquet part."""
    kind = output_kind(out)
    if kind == "stdout":
        if resume:
            raise MLMProbError("--resume needs --out (results on stdout cannot be resumed)")
        return ResultWriter(None, fields=fields)
    path = Path(out)
    if kind == "parquet":
        return ParquetWriter(path, resume=resume, config=config, fields=fields, part_rows=part_rows)
    return LineWriter(path, resume=resume, config=config, fields=fields)


def read_results(path: str | Path) -> Iterable[dict]:
    """Stream the rows of a result file (JSONL, TSV or Parquet; Parquet parts of an unfinished run too)."""
    path = Path(path)
    kind = output_kind(path)
    parts = path.with_name(path.name + ".parts")
    if kind == "parquet":
        from .inputs import _pyarrow_parquet
        pq = _pyarrow_parquet()
        files = [path] if path.exists() else sorted(parts.glob("part-*.parquet"))
        if not files:
            raise MLMProbError(f"result file {str(path)!r} does not exist")
        for f in files:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=4096):
                yield from batch.to_pylist()
        return
    if not path.exists():
        raise MLMProbError(f"result file {str(path)!r} does not exist")
    with path.open(encoding="utf-8") as fh:
        header = None
        for i, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                break  # cut by a kill
            if not line.strip():
                continue
            if kind == "tsv":
                cells = line.rstrip("\n").split("\t")
                if header is None:
                    header = cells
                    continue
                yield dict(zip(header, cells))
            else:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    raise MLMProbError(f"{path} line {i} is not valid JSON (the file is damaged)") from None
