"""Result writers (JSONL, TSV or Parquet by ``--out``'s suffix, or JSONL on stdout) that commit as they go and resume
without loss: line files append, flush and ``fsync`` whole lines; Parquet commits parts
``OUT.parts/part-NNNNNN.parquet`` joined into ``OUT`` when the run completes. A run holds ``OUT.lock`` and keeps
``OUT.meta.json`` (:mod:`mlmprob.runtime.log`): its configuration, shard, completion and skipped ids."""

from __future__ import annotations

import importlib
import math
import os
import shutil
import sys
from collections.abc import Iterable
from itertools import islice
from pathlib import Path

from ..errors import MLMProbError
from ..jsonl import dumps, json_safe  # noqa: F401 - re-exported
from .hold import hold_at
from .inputs import _pyarrow_parquet
from .log import ResumableLog, RunHold, RunMeta, read_lines, read_log
from .safefs import move_into_place, naming, new_file, real_dir, refuse_link

OUTPUT_KINDS = (".jsonl", ".tsv", ".parquet")


def output_kind(path: str | Path | None) -> str:
    """``stdout``, ``jsonl``, ``tsv`` or ``parquet`` from ``--out``'s suffix (``.gz`` is not supported)."""
    if path is None or str(path) == "-":
        return "stdout"
    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_KINDS:
        raise MLMProbError(f"--out {str(path)!r}: use a .jsonl, .tsv or .parquet file")
    return suffix[1:]


def check_tsv_id(rid) -> None:
    """Refuse an id a TSV row cannot keep (a tab or a line break): its row would not match its record on resume."""
    if isinstance(rid, str) and any(c in rid for c in "\t\n\r"):
        raise MLMProbError(
            f"id {rid!r} holds a tab or line break, which a TSV output cannot keep (--resume would "
            "not find it): write .jsonl or .parquet"
        )


def tsv_cell(v) -> str:
    """One TSV cell: empty for None and non-finite floats, lists and nested values as strict JSON text, tabs and
    newlines as spaces."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, (list, tuple, dict)):
        return dumps(v)
    return str(v).replace("\t", " ").replace("\n", " ")


class ResultWriter:
    """Base class: ``write(rows)`` commits rows (dicts with an ``id``), ``close(complete)`` ends the run."""

    kind = "stdout"

    def __init__(self, path: Path | None, *, fields: tuple[str, ...] | None = None):
        self.path, self.fields, self.rows_written = path, fields, 0
        self._done: set[str] = set()  # the ids the output held when opened (a file writer's _open sets them)
        self._meta: dict = {}  # what OUT.meta.json holds

    def done_ids(self) -> set[str]:
        """The ids the output held when it was opened (not those written since: memory stays flat)."""
        return self._done

    def skipped(self) -> list[list[str]]:
        """``[id, reason]`` of the units the output's earlier runs skipped (from ``OUT.meta.json``)."""
        return [list(x) for x in self._meta.get("skipped", [])]

    def write(self, rows: list[dict]) -> None:
        with naming("<stdout>"):
            for row in rows:
                sys.stdout.write(dumps(row) + "\n")
            sys.stdout.flush()
        self.rows_written += len(rows)

    def close(self, complete: bool = True, **meta) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc) -> None:
        try:
            self.close(complete=False)
        except OSError:
            if exc_type is None:  # else the error in flight (a full disk) says which write failed, not the close's
                raise


class _FileWriter(ResultWriter):
    """A file output held through :mod:`mlmprob.runtime.log` (its lock and ``OUT.meta.json``)."""

    path: Path  # a file output always has one

    def __init__(self, path: Path, *, resume: bool, config: dict | None = None, fields=None, verify=None):
        super().__init__(path, fields=fields)
        self.meta_path = meta_path(path)
        # the side file is written before the output (config {}: even without a configuration), so an output
        # without one is not mlmprob's: resuming it is refused before anything is touched
        self._hold_args = dict(meta=RunMeta(self.meta_path, indent=2), require_meta=True, verify=verify)
        self._hold = self._open(resume, {} if config is None else config)
        self.lock = self._hold.lock
        self._created = not self._hold.existed
        # the hold's configuration: this run's, less what an older output never stored (config_check.as_stored)
        self._meta = dict(config=self._hold.config or {}, complete=False, skipped=self._hold.stored.get("skipped", []))
        self._closed = False
        try:
            self._write_meta()
        except BaseException as e:  # a full disk: the lock goes, and what this run created
            self.__exit__(type(e), e, None)
            raise

    def _write_meta(self) -> None:
        assert self._hold.meta_file is not None  # opened with RunMeta(OUT.meta.json)
        self._hold.meta_file.save(self._meta)

    def close(self, complete: bool = True, **meta) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            try:
                self._finish(complete)
            except BaseException:
                self._discard_if_empty()
                raise
            if not complete and self._discard_if_empty():
                return
            rows = len(self.done_ids()) + self.rows_written if complete else None
            self._meta.update(meta, complete=bool(complete), rows=rows)
            self._write_meta()
        finally:
            self._hold.close()

    def _discard_if_empty(self) -> bool:
        """A run that failed before its first committed row leaves nothing behind: the output it created goes."""
        if not self._created or self._committed() > 0:
            return False
        remove_output(self.path)
        return True

    def _committed(self) -> int:
        return self.rows_written

    def _open(self, resume: bool, config: dict | None) -> RunHold:
        raise NotImplementedError

    def _finish(self, complete: bool) -> None:
        """Commit what is buffered (and, when ``complete``, join the output); line files have nothing to do."""


class LineWriter(_FileWriter):
    """JSONL (one object a line) or TSV (``fields`` columns, header first), a :class:`ResumableLog`."""

    _hold: ResumableLog

    def _open(self, resume: bool, config: dict | None) -> ResumableLog:
        self.kind = "tsv" if self.path.suffix.lower() == ".tsv" else "jsonl"
        log = ResumableLog(self.path, config=config, resume=resume, **self._hold_args)
        try:
            header = next(iter(log.lines()), None) if self.kind == "tsv" else None
            if header is not None:
                self._done.update(line.split("\t", 1)[0] for line in islice(log.lines(), 1, None))
            for n, row in enumerate(log.records() if self.kind == "jsonl" else ()):
                if not isinstance(row, dict) or "id" not in row:
                    raise MLMProbError(f"{self.path} record {n + 1} is damaged (not a result row); cannot resume it")
                self._done.add(str(row["id"]))
        except BaseException:
            log.close()
            raise
        self._header_needed = self.kind == "tsv" and header is None
        if header is not None:
            self.fields = tuple(header.split("\t"))
        return log

    def write(self, rows: list[dict]) -> None:
        if not rows:
            return
        lines = []
        if self.kind == "tsv":
            if self._header_needed:  # the columns: as given, else the first row's keys
                self.fields = tuple(self.fields or rows[0].keys())
                lines.append("\t".join(self.fields))
                self._header_needed = False
            fields: tuple[str, ...] = self.fields or ()  # from the header, or the first row's keys above
            for r in rows:
                check_tsv_id(r.get("id"))
            lines += ["\t".join(tsv_cell(r.get(k)) for k in fields) for r in rows]
        else:
            lines = [dumps(r) for r in rows]
        self._hold.append_lines(lines)
        self.rows_written += len(rows)
        hold_at(self.rows_written)


class ParquetWriter(_FileWriter):
    """Parquet in committed parts, joined into one file when the run completes."""

    kind = "parquet"

    def __init__(self, path: Path, *, part_rows: int = 1024, **kw):
        self.parts, self.part_rows = path.with_name(path.name + ".parts"), part_rows
        super().__init__(path, **kw)  # resume, config, fields, verify of _FileWriter

    def _open(self, resume: bool, config: dict | None) -> RunHold:
        refuse_link(self.parts, "the Parquet parts folder")  # its *.tmp files are deleted below: never a link's
        hold = RunHold(
            self.path, config=config, resume=resume, exists=self.path.exists() or self.parts.exists(), **self._hold_args
        )
        try:
            self._pq, self._pa = _pyarrow_parquet(), importlib.import_module("pyarrow")
            if self.path.exists() and self.parts.exists():
                shutil.rmtree(self.parts)  # the joined file was written last: it holds every part
            real_dir(self.parts, "the Parquet parts folder")
            for tmp in self.parts.glob("*.tmp"):
                tmp.unlink()  # a part cut by a kill
            if self.path.exists():
                os.replace(self.path, self._part_name(0))
            for p in self._part_files():
                self._done.update(str(x) for x in self._pq.read_table(p, columns=["id"]).column("id").to_pylist())
        except BaseException:
            hold.close()
            raise
        self._buf: list[dict] = []
        return hold

    def _part_files(self) -> list[Path]:
        return sorted(self.parts.glob("part-*.parquet"))

    def _part_name(self, n: int) -> Path:
        return self.parts / f"part-{n:06d}.parquet"

    def _committed(self) -> int:
        return self.rows_written - len(self._buf)

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
        with new_file(tmp) as f:  # O_EXCL | O_NOFOLLOW; removed when the write fails (a full disk)
            self._pq.write_table(self._pa.Table.from_pylist(self._buf), f)
        move_into_place(tmp, target)
        self._buf = []
        hold_at(self.rows_written)

    def _finish(self, complete: bool) -> None:
        self._commit()
        if not complete:
            return
        files = self._part_files()
        schema = self._pa.unify_schemas([self._pq.read_schema(p) for p in files]) if files else self._pa.schema([])
        tmp = self.path.with_name(self.path.name + ".tmp")
        with new_file(tmp) as f, self._pq.ParquetWriter(f, schema) as w:
            for p in files:
                w.write_table(self._pq.read_table(p).cast(schema))
        move_into_place(tmp, self.path)
        shutil.rmtree(self.parts)


def meta_path(out: str | Path) -> Path:
    """``OUT.meta.json``: the file that keeps a run's configuration, shard, completion and skipped ids."""
    return Path(out).with_name(Path(out).name + ".meta.json")


def remove_output(path: Path) -> None:
    """Remove the output ``path``, its ``.meta.json`` and its Parquet parts."""
    for p in (path, meta_path(path)):
        p.unlink(missing_ok=True)
    shutil.rmtree(path.with_name(path.name + ".parts"), ignore_errors=True)


def open_writer(
    out: str | Path | None,
    *,
    resume: bool = False,
    config: dict | None = None,
    fields: tuple[str, ...] | None = None,
    part_rows: int = 1024,
    verify=None,
) -> ResultWriter:
    """The writer for ``--out`` (stdout JSONL when None). ``config`` is stored in ``OUT.meta.json`` and must match on
    ``--resume`` (an output without one, not mlmprob's, is refused unchanged); ``fields``: the TSV columns;
    ``part_rows``: the rows of a Parquet part; ``verify(stored config)`` further checks a resumed output."""
    kind = output_kind(out)
    if kind == "stdout":
        if resume:
            raise MLMProbError("--resume needs --out (results on stdout cannot be resumed)")
        return ResultWriter(None, fields=fields)
    assert out is not None  # output_kind gives "stdout" for None
    path = Path(out)
    if path.is_dir():
        raise MLMProbError(f"--out {str(out)!r} is a folder; give a file path ending in .jsonl, .tsv or .parquet")
    if kind == "parquet":
        return ParquetWriter(path, resume=resume, config=config, fields=fields, part_rows=part_rows, verify=verify)
    return LineWriter(path, resume=resume, config=config, fields=fields, verify=verify)


def read_results(path: str | Path) -> Iterable[dict]:
    """Stream the rows of a result file (JSONL, TSV or Parquet; Parquet parts of an unfinished run too)."""
    path = Path(path)
    kind = output_kind(path)
    pq = _pyarrow_parquet() if kind == "parquet" else None
    parts = path.with_name(path.name + ".parts")
    files = [path] if path.exists() else sorted(parts.glob("part-*.parquet")) if pq else []
    if not files:
        raise MLMProbError(f"result file {str(path)!r} does not exist")
    if pq is not None:
        for f in files:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=4096):
                yield from batch.to_pylist()
    elif kind == "jsonl":
        yield from read_log(path)
    else:
        lines = read_lines(path)
        header = next(lines, "").split("\t")
        for line in lines:
            yield dict(zip(header, line.split("\t"), strict=False))  # a short or long row is read as before: no error
