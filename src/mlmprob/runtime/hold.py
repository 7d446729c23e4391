"""A run held at a known point, for tests that kill a run at a known row (docs/reliability.md, "Held runs").

With ``MLMPROB_HOLD=ROWS:WFD:RFD`` (pipe ends the controller passed down), a run stops once its writer has committed
at least ``ROWS`` rows: it writes ``held PID ROWS`` to ``WFD``, then reads ``RFD`` until end of file. A malformed
value is refused at the command's start (:func:`check_hold`); a descriptor not open then (or now another file) is a
controller that is gone: the run neither writes to it nor waits on it. A standard stream (0-2) is never closed. A
run spooling a stream watches ``RFD`` (:func:`go_fd`): a controller that lets go first stops it with one error line."""

from __future__ import annotations

import os
from contextlib import suppress

from ..errors import MLMProbError

HOLD_ENV = "MLMPROB_HOLD"
_held: set[str] = set()
_File = tuple[int, int] | None  # (device, inode) of an open descriptor's file; None: not open
_seen: dict[tuple[int, str], tuple[_File, _File]] = {}  # (pid, value) -> the files of WFD and RFD at the start


def _spec() -> tuple[int, int, int] | None:
    value = os.environ.get(HOLD_ENV)
    if not value:
        return None
    try:
        rows, wfd, rfd = (int(x) for x in value.split(":"))
    except ValueError:
        rows = wfd = rfd = -1
    if min(rows, wfd, rfd) < 0:
        raise MLMProbError(f"${HOLD_ENV}={value!r}: give ROWS:WFD:RFD (three integers >= 0)") from None
    return rows, wfd, rfd


def check_hold() -> None:
    """Refuse a malformed ``$MLMPROB_HOLD`` now (a command's start), in one line, not after the first commit."""
    if (spec := _spec()) is not None:
        _seen[(os.getpid(), os.environ[HOLD_ENV])] = (_file_of(spec[1]), _file_of(spec[2]))


def _file_of(fd: int) -> _File:
    """The file open at ``fd`` (device and inode), None when ``fd`` is not open."""
    with suppress(OSError):
        st = os.fstat(fd)
        return st.st_dev, st.st_ino
    return None


def _controllers(fd: int, which: int) -> bool:
    """Whether ``fd`` (``which``: 0 WFD, 1 RFD) is open and the file it was at :func:`check_hold`."""
    now = _file_of(fd)
    start = _seen.get((os.getpid(), os.environ.get(HOLD_ENV, "")))
    return now is not None and (start is None or start[which] == now)


def _close(fd: int) -> None:
    if fd > 2:  # a standard stream stays open for the run
        with suppress(OSError):
            os.close(fd)


def go_fd() -> int | None:
    """``RFD`` while this run may still be held; None without a hold, once held, or when the controller is gone."""
    spec = _spec()
    if spec is None or os.environ[HOLD_ENV] in _held or not _controllers(spec[2], 1):
        return None
    return spec[2]


def hold_at(committed: int) -> None:
    """Called by the writers after every commit with the rows this run has committed so far."""
    spec = _spec()
    if spec is None or committed < spec[0] or os.environ[HOLD_ENV] in _held:
        return
    _held.add(os.environ[HOLD_ENV])
    _, wfd, rfd = spec
    if not _controllers(wfd, 0):
        return  # the controller is gone (or never was): go on
    try:
        os.write(wfd, f"held {os.getpid()} {committed}\n".encode())
    except OSError:
        return  # the controller is gone: go on
    finally:
        _close(wfd)
    if not _controllers(rfd, 1):
        return
    try:
        with suppress(OSError):
            while os.read(rfd, 4096):
                pass
    finally:
        _close(rfd)
