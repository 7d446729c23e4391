"""Copies of standard input, pipes, FIFOs and character devices, made once per command (a command reads its input
more than once, a stream only once) and removed on any exit (docs/reliability.md, "Standard input").

:func:`copy_of` copies a stream to ``$TMPDIR``; within a :func:`command_scope` a name given again is the same copy.
Where ``/proc/PID/fd`` exists the copy's name is removed at once and the copy read by descriptor, so it goes with the
process however it ends; elsewhere it is removed by the scope, ``atexit``, a SIGTERM/SIGHUP handler (then the
signal's previous action runs), or after a SIGKILL by the next command's :func:`sweep`, which removes only copies
(``mlmprob-stdin-PID-RANDOM``, ``mlmprob-pipe-PID-RANDOM``) whose ``flock`` it can take: no pid reuse fools it.
Without ``fcntl`` there is no lock and no sweep."""

from __future__ import annotations

import atexit
import errno
import os
import re
import select
import signal
import stat
import sys
import tempfile
from collections.abc import Callable
from contextlib import contextmanager, suppress
from pathlib import Path

from ..errors import MLMProbError
from .hold import HOLD_ENV, go_fd

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Unix
    fcntl = None  # type: ignore[assignment]  # checked before each use: no lock and no sweep without it

NAME = re.compile(r"^mlmprob-(stdin|pipe)-(\d+)-[A-Za-z0-9_]+$")
CHUNK = 1 << 20
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}

_copies: dict[Path, tuple[int, int, bool]] = {}  # copy -> (owner pid, locked descriptor, whether it has a name)
_scope: dict[str, Path] | None = None  # name given -> copy, within a command
_previous: dict[int, signal.Handlers | int | Callable | None] = {}  # the signal actions replaced by _on_signal


def copy_of(given: str) -> Path:
    """The copy of the stream ``given`` (``-``: standard input; else a pipe's, FIFO's or device's name): made now, or
    within a :func:`command_scope` the one made for the same name before."""
    copy = _scope.get(given) if _scope is not None else None
    if copy is None or copy not in _copies or not copy.exists():
        copy = _make_copy(given, "standard input" if given == "-" else given)
        if _scope is not None:
            _scope[given] = copy
    return copy


def _make_copy(given: str, name: str) -> Path:
    if given == "-" and sys.stdin is None:
        raise MLMProbError("standard input is closed: there is nothing to read from '-'")
    try:
        folder = tempfile.gettempdir()
    except OSError as e:  # every candidate full or not writable: the message lists them
        raise MLMProbError(f"cannot copy {name}: {e.strerror or e} (set TMPDIR to a folder with room)") from None
    fd, copy = _locked_file(folder, "stdin" if given == "-" else "pipe", name)
    try:
        if given == "-":
            _copy(sys.stdin.buffer, fd, name, folder)
        else:
            try:
                src = open(given, "rb", buffering=0)
            except OSError as e:
                raise MLMProbError(f"{name}: cannot read it: {e.strerror or e}") from None
            with src:
                _copy(src, fd, name, folder)
    except BaseException:
        remove(copy)
        raise
    return copy


def _locked_file(folder: str, kind: str, name: str) -> tuple[int, Path]:
    """A new file ``mlmprob-KIND-PID-RANDOM`` in ``folder`` under this process's exclusive lock (a sweep that took a
    fresh file's lock first removes it: another is made)."""
    for _ in range(10):
        try:
            fd, tmp = tempfile.mkstemp(prefix=f"mlmprob-{kind}-{os.getpid()}-", dir=folder)
        except OSError as e:
            raise MLMProbError(_write_error(e, folder, name)) from None
        path = Path(tmp)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                same = os.path.samestat(os.stat(path), os.fstat(fd))
            except OSError:
                same = False
            if not same:  # a sweep has it: it removes it
                os.close(fd)
                continue
        unnamed = _unnamed(fd, path)
        _register(unnamed or path, fd, unnamed is None)
        return fd, unnamed or path
    raise MLMProbError(f"cannot make a copy of {name} in the temporary folder {folder}")


def _unnamed(fd: int, path: Path) -> Path | None:
    """``/proc/PID/fd/FD`` once the name ``path`` is removed, where that reopens this file; else None."""
    by_fd = Path(f"/proc/{os.getpid()}/fd/{fd}")
    with suppress(OSError):
        if os.path.samestat(os.stat(by_fd), os.fstat(fd)):
            path.unlink()
            return by_fd
    return None


def _register(path: Path, fd: int, named: bool) -> None:
    _copies[path] = (os.getpid(), fd, named)
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None and sig not in _previous:
            with suppress(ValueError, OSError):  # not the main thread: atexit and the sweep remain
                _previous[sig] = signal.signal(sig, _on_signal)


def _on_signal(signum, frame) -> None:
    previous = _previous.get(signum, signal.SIG_DFL)
    remove_copies()
    _restore_signals()
    if callable(previous):
        previous(signum, frame)
    elif previous != signal.SIG_IGN:
        os.kill(os.getpid(), signum)  # die of it, as without the handler


def _copy(src, fd: int, name: str, folder: str) -> None:
    """Copy the stream ``src`` to ``fd`` to its end (read errors name the input, write errors the temporary folder);
    under a hold (:mod:`mlmprob.runtime.hold`) the controller's letting go ends the wait."""
    watch = go_fd()
    try:
        src_fd = src.fileno()
    except (OSError, ValueError, AttributeError):  # an in-memory stream (tests): it ends
        src_fd = None
    read = getattr(src, "read1", src.read)
    while True:
        if watch is not None and src_fd is not None:
            while src_fd not in select.select([src_fd, watch], [], [])[0]:
                if not os.read(watch, 4096):
                    raise MLMProbError(
                        f"{name} had not ended when the run's controller let go (${HOLD_ENV}): a run reads all of "
                        f"its input before its first row, so it is held only after its input ends; close {name}"
                    )
        try:
            data = read(CHUNK)
        except OSError as e:
            raise MLMProbError(f"{name}: cannot read it: {e.strerror or e}") from None
        if not data:
            return
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except OSError as e:
                raise MLMProbError(_write_error(e, folder, name)) from None


def _write_error(e: OSError, folder: str, name: str) -> str:
    """One line for a failed write of a copy: the temporary folder is named, not the input."""
    if e.errno in _FULL:
        return f"the temporary folder {folder} is full: cannot copy {name} there (set TMPDIR to a folder with room)"
    return f"cannot copy {name} to the temporary folder {folder}: {e.strerror or e} (set TMPDIR to a folder with room)"


def remove(copy: Path) -> None:
    """Remove a copy this process made (a forked child leaves its parent's copies alone)."""
    entry = _copies.get(copy)
    if entry is None or entry[0] != os.getpid():
        return
    del _copies[copy]
    if entry[2]:
        with suppress(OSError):
            copy.unlink(missing_ok=True)
    os.close(entry[1])  # the lock (and an unnamed copy) goes with it, after the name
    if not _copies:
        _restore_signals()


def _restore_signals() -> None:
    """The signal actions ``_on_signal`` replaced, back (where it is still the handler)."""
    for sig, previous in list(_previous.items()):
        with suppress(ValueError, OSError):  # not the main thread: it stays, harmless without copies
            if signal.getsignal(sig) is _on_signal:
                signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
            del _previous[sig]


def remove_copies() -> None:
    """Remove every copy this process made (at exit, on SIGTERM/SIGHUP)."""
    for copy in list(_copies):
        remove(copy)


atexit.register(remove_copies)


@contextmanager
def command_scope():
    """One command: a name spooled again in it is the same copy, and its copies are removed at its end."""
    global _scope
    outer, _scope = _scope, {}
    try:
        yield
    finally:
        made, _scope = _scope, outer
        for copy in made.values():
            remove(copy)


def sweep(folder: str | Path | None = None) -> list[Path]:
    """Remove (and return) the copies in ``folder`` (default: the temporary folder) whose lock is free: their process
    is gone. Files of other names or users, and locked copies, are left alone; nothing here raises."""
    if fcntl is None:
        return []
    removed = []
    try:
        folder = Path(folder if folder is not None else tempfile.gettempdir())  # none usable (full): nothing to sweep
        entries = [e for e in os.scandir(folder) if NAME.match(e.name)]
    except OSError:
        return []
    for entry in entries:
        path = Path(entry.path)
        if path in _copies:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.path.samestat(os.stat(path, follow_symlinks=False), st):
                path.unlink()
                removed.append(path)
        except OSError:
            pass  # held by a live process, or gone meanwhile
        finally:
            os.close(fd)
    return removed
