"""The side files and folders a run creates beside its output (``OUT.lock``, ``OUT.meta.json`` and its ``.tmp``, the
Parquet parts, checkpoint and tokenizer folders), created without ever following a symbolic link: one there is
refused in one line (:class:`UnsafePath`). Files are opened with ``O_NOFOLLOW`` (temporary ones ``O_EXCL``, a stale
regular one unlinked first); folders are checked with ``lstat``."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from ..errors import MLMProbError


class UnsafePath(MLMProbError):
    """A side file or folder mlmprob creates itself is a symbolic link (or not the kind of entry it writes)."""


def is_link(path: str | Path) -> bool:
    """Whether ``path`` itself is a symbolic link (a dangling one included); never follows it."""
    with suppress(FileNotFoundError, NotADirectoryError):
        return stat.S_ISLNK(os.lstat(path).st_mode)
    return False


def refuse_link(path: str | Path, what: str = "this file") -> None:
    """Raise :class:`UnsafePath` when ``path`` is a symbolic link; ``what`` names the entry in the message."""
    if is_link(path):
        raise UnsafePath(
            f"{path} is a symbolic link; mlmprob does not write through it (it creates {what} itself "
            "and leaves what the link points to untouched): remove the link or choose another --out"
        )


def open_nofollow(path: str | Path, flags: int, mode: int = 0o644, what: str = "this file") -> int:
    """``os.open(path, flags | O_NOFOLLOW)``; a symbolic link at ``path`` is refused (:class:`UnsafePath`)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EEXIST, errno.EMLINK) and is_link(path):
            refuse_link(path, what)
        raise


@contextmanager
def naming(path: str | Path):
    """An ``OSError`` that names no file (a failed ``write`` or ``fsync``: disk full, I/O error) gets ``path`` as its
    ``filename``, so the message can say which file."""
    try:
        yield
    except OSError as e:
        if e.filename is None:
            e.filename = str(path)
        raise


@contextmanager
def new_file(path: str | Path, what: str = "this temporary file") -> Iterator[BinaryIO]:
    """``with new_file(tmp) as f:`` a new file at ``path`` (``O_CREAT | O_EXCL | O_NOFOLLOW``: a stale regular file
    there, a kill's leftover, is removed first; a symbolic link is refused), open for binary writing; a failure inside
    the block (a full disk) removes the file before the error goes on. An ``OSError`` naming no file gets ``path``."""
    refuse_link(path, what)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise UnsafePath(
            f"{path} is a folder; mlmprob writes {what} there: remove it or choose another --out"
        ) from None
    fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, what=what)
    try:
        with naming(path), os.fdopen(fd, "wb") as f:
            yield f
    except BaseException:
        with suppress(OSError):
            os.unlink(path)  # the file this call created (O_EXCL): never another's
        raise


def replace_file(path: str | Path, data: str | bytes, tmp: str | Path | None = None, what: str = "this file") -> None:
    """Write ``path`` atomically: ``data`` (text is UTF-8) to ``tmp`` (default ``PATH.tmp``, created new), renamed over
    ``path``; when either step fails ``tmp`` is removed and ``path`` is as it was. A symbolic link at either is
    refused."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp") if tmp is None else Path(tmp)
    refuse_link(path, what)
    with new_file(tmp) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    move_into_place(tmp, path)


def move_into_place(tmp: str | Path, path: str | Path) -> None:
    """Rename the finished temporary file ``tmp`` over ``path``; when that fails, ``tmp`` is removed."""
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def real_dir(path: str | Path, what: str = "this folder") -> Path:
    """The folder ``path``, made when missing; a symbolic link there (to a folder or not) is refused."""
    path = Path(path)
    refuse_link(path, what)
    with suppress(FileExistsError):
        path.mkdir()
    if is_link(path) or not path.is_dir():
        refuse_link(path, what)
        raise UnsafePath(f"{path} is not a folder; mlmprob keeps {what} there: remove it or choose another --out")
    return path


def cache_file(name: str) -> Path:
    """``$XDG_CACHE_HOME/mlmprob/NAME`` (``~/.cache`` by default): where a measurement or a digest is kept."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mlmprob" / name


def save_cache(path: Path, text: str, what: str = "this file") -> None:
    """Write the cache file ``path`` atomically (a temporary name per process); a failure only costs time later."""
    with suppress(OSError, UnsafePath):
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, text, path.with_name(f"{path.name}.{os.getpid()}.tmp"), what)
