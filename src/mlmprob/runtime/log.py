"""One resumable log for every file a long run appends to (result files, experiment records, sampler traces, run
journals): a :class:`ResumableLog` holds ``OUT.lock``, checks the stored configuration (a :class:`RunMeta` side file
or the first line) against this run's (:func:`~mlmprob.runtime.config_check.check_config`), trims a last line a kill
cut in half and commits every append with flush and ``fsync``; :func:`read_log` reads the committed records."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TextIO

from ..errors import MLMProbError
from ..jsonl import dumps
from .config_check import as_stored, check_command, check_config, normalized
from .lock import WriterLock
from .safefs import naming, refuse_link, replace_file


class RunMeta:
    """A run's JSON side file (``OUT.meta.json``, ``config.json``, ...): the configuration under ``key``
    (the whole file when ``key`` is None) and whatever else the run keeps there. Written atomically."""

    def __init__(self, path: str | Path, key: str | None = "config", indent: int | None = None):
        self.path, self.key, self.indent = Path(path), key, indent

    def load(self) -> dict:
        """The file's object; ``{}`` when it is absent or unreadable (a kill while it was first written)."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def config(self, data: dict | None = None) -> dict | None:
        data = self.load() if data is None else data
        return (data.get(self.key) if self.key is not None else data) or None

    def save(self, data: dict) -> None:
        replace_file(self.path, dumps(data, indent=self.indent) + "\n", what="the run's side file")  # via PATH.tmp


def _committed(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of the committed (newline-terminated) non-blank lines."""
    with open(path, encoding="utf-8", newline="\n") as fh:
        for i, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                return  # a torn last line: not committed
            if line.strip():
                yield i, line[:-1]


def _decode(path: Path, i: int, line: str):
    try:
        return json.loads(line)
    except (json.JSONDecodeError, RecursionError, ValueError):  # ValueError: an integer of over 4,300 digits
        raise MLMProbError(f"{path} line {i} is damaged (not valid JSON): {line.strip()[:80]}") from None


def read_lines(path: str | Path) -> Iterator[str]:
    """The committed non-blank lines of ``path`` as text (a TSV's header first); nothing when it does not exist."""
    path = Path(path)
    yield from (line for _, line in (_committed(path) if path.exists() else ()))


def read_log(path: str | Path, *, skip_header: bool = False) -> Iterator:
    """The committed records of a log, in order (nothing when the file does not exist). A torn last line is
    skipped; a damaged line before it is an error naming the line."""
    path = Path(path)
    for n, (i, line) in enumerate(_committed(path) if path.exists() else ()):
        if not (skip_header and n == 0):
            yield _decode(path, i, line)


def trim_torn_line(path: Path) -> bool:
    """Cut a last line without its newline (a kill in the middle of a write) from ``path``, durably;
    True when something was cut. Reads only the file's tail."""
    with open(path, "rb+") as f:
        end = pos = f.seek(0, os.SEEK_END)
        keep = 0
        while pos > 0:
            start = max(0, pos - (1 << 16))
            f.seek(start)
            chunk = f.read(pos - start)
            if pos == end and chunk.endswith(b"\n"):
                return False
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                keep = start + cut + 1
                break
            pos = start
        if end == 0:
            return False
        f.truncate(keep)
        f.flush()
        os.fsync(f.fileno())
        return True


class ForeignOutput(MLMProbError):
    """``--resume`` onto an output that mlmprob did not write (it has no metadata of a run)."""


class RunHold:
    """A run's hold on an output: its lock, the stored configuration checked and (when new) written; the base of
    :class:`ResumableLog`, the whole of it for Parquet parts. ``require_meta``: refuse an existing output without its
    side file; ``verify(stored config)``: a further check of a resumed output; both before anything is touched."""

    def __init__(
        self,
        path: str | Path,
        *,
        config: dict | None = None,
        meta: RunMeta | None = None,
        resume: bool = True,
        exists: bool | None = None,
        lock: bool = True,
        require_meta: bool = False,
        verify: Callable[[dict], None] | None = None,
    ):
        self.path = Path(path)
        self.config, self.meta_file = config, meta
        self.lock = WriterLock(self.path) if lock else None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.lock is not None:
            self.lock.acquire()
        try:
            if meta is not None:  # refused before anything is read or written (runtime.safefs)
                refuse_link(meta.path, "the run's side file")
            self.existed = self.path.exists() if exists is None else exists
            if self.existed and not resume:
                raise MLMProbError(f"{self.path} exists; pass --resume to continue it or choose another --out")
            self.stored: dict = meta.load() if meta is not None and self.existed else {}
            if self.existed and meta is not None:
                if require_meta and meta.key not in self.stored:
                    raise ForeignOutput(
                        f"cannot resume {self.path}: it has no {meta.path.name} (mlmprob did not write it, "
                        "or its metadata was removed); nothing was changed: choose another --out"
                    )
                # another command's output: said so before its identity is compared
                check_command(self.path, meta.config(self.stored), config)
                if verify is not None:
                    verify(meta.config(self.stored) or {})
            if meta is not None:
                self.config = as_stored(meta.config(self.stored), config)
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        if self.meta_file is None:
            return
        stored, key = self.meta_file.config(self.stored), self.meta_file.key
        check_config(self.path, stored, self.config)
        if self.config is not None and not stored:  # a new output: the side file gets this run's configuration
            self.stored = dict(self.config) if key is None else {**self.stored, key: self.config}
            self.meta_file.save(self.stored)

    def close(self) -> None:
        if self.lock is not None:
            self.lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ResumableLog(RunHold):
    """An append-only file of lines (JSON records unless the caller writes raw lines), continued after a kill.
    ``config`` is stored in ``meta`` or, with ``header=True``, as the first line (written when new, compared on
    resume). ``resume=False`` refuses an existing file; ``lock=False`` leaves the lock to a caller holding it;
    ``encode`` turns a record into its line."""

    def __init__(self, path: str | Path, *, header: bool = False, encode: Callable = dumps, **hold):
        self.use_header, self.encode = header, encode
        self.header: dict | None = None
        self._fh: TextIO | None = None
        super().__init__(path, **hold)  # config, meta, resume, lock, ... of RunHold

    def _open(self) -> None:
        # the configuration is checked before the torn line is cut: a refused resume changes nothing
        if self.use_header:
            first = next(iter(self.records(skip_header=False)), None) if self.existed else None
            if first is not None:
                self.header = first
                check_config(self.path, first, as_stored(first, self.config))
        else:
            super()._open()
        if self.existed:
            trim_torn_line(self.path)
        self._fh = open(self.path, "a", encoding="utf-8", newline="\n")
        if self.use_header and self.header is None and self.config is not None:
            self.append(self.config)
            self.header = normalized(self.config)

    def lines(self) -> Iterator[str]:
        """The committed non-blank lines, as text (the header line included)."""
        return read_lines(self.path)

    def records(self, skip_header: bool | None = None) -> Iterator:
        """The committed records (after the header line when the log has one)."""
        return read_log(self.path, skip_header=self.use_header if skip_header is None else skip_header)

    def done(self, key: Callable[[dict], object]) -> set:
        """``{key(record)}`` over the committed records: the units a resumed run skips."""
        return {key(r) for r in self.records()}

    def append(self, *records) -> None:
        """Commit records (one line each, strict JSON) together."""
        self.append_lines([self.encode(r) for r in records])

    def append_lines(self, lines: Iterable[str]) -> None:
        """Commit lines of text (no newlines inside): one write, flushed and ``fsync``-ed."""
        text = "".join(line + "\n" for line in lines)
        if not text:
            return
        fh = self._file()
        with naming(self.path):
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())

    def drop_tail(self, keep: Callable[[dict], bool]) -> int:
        """Remove the trailing records for which ``keep`` is false (a group of lines a kill cut after some were
        committed); returns how many were removed."""
        ends: list[int] = []  # byte offset after each committed line
        good = offset = 0  # good: the committed lines up to the last kept one
        with open(self.path, "rb") as f:
            for n, raw in enumerate(f):
                offset += len(raw)
                if not raw.strip():
                    continue
                rec = _decode(self.path, n + 1, raw.decode("utf-8"))
                header = self.use_header and not ends
                ends.append(offset)
                if header or keep(rec):
                    good = len(ends)
        dropped = len(ends) - good
        if dropped:
            fh = self._file()
            fh.flush()
            os.truncate(self.path, ends[good - 1] if good else 0)
            os.fsync(fh.fileno())
        return dropped

    def _file(self) -> TextIO:
        assert self._fh is not None, "the log is not open"
        return self._fh

    def close(self) -> None:
        fh, self._fh = self._fh, None
        try:
            if fh is not None:
                with naming(self.path):
                    fh.close()  # a full disk: what a failed write left in the buffer fails again here
        finally:
            super().close()  # the lock goes either way


def append_record(path: str | Path, record: dict) -> None:
    """Append one record to the log at ``path`` (a run journal such as ``runs.jsonl``) under its lock."""
    with ResumableLog(path) as log:
        log.append(record)
