"""One writer per output: an advisory ``flock`` on ``OUT.lock`` held while a run writes ``OUT``; the kernel releases
it when the process dies (SIGKILL included), so no stale lock is left, and a second writer is refused in one line."""

from __future__ import annotations

import os
import socket
from contextlib import suppress
from pathlib import Path

from ..errors import MLMProbError
from .safefs import naming, open_nofollow


class OutputLocked(MLMProbError):
    """Another live process is writing the same output."""


_HELD: set[str] = set()  # the lock files this process holds (see WriterLock.held_here)


class WriterLock:
    """``with WriterLock(out):`` holds ``out.lock``; raises :class:`OutputLocked` if another process has it. An output
    that is a folder may keep its lock inside (``lock_path``); errors still name ``target``:"""

    def __init__(self, target: str | Path, lock_path: str | Path | None = None):
        self.target = Path(target)
        self.path = Path(lock_path) if lock_path is not None else self.target.with_name(self.target.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> WriterLock:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT, what="the output's lock")  # never a link's target
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 200).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise OutputLocked(
                    f"{self.target} is being written by another process ({holder}); "
                    "wait for it to finish or choose another --out"
                ) from None
            with suppress(FileNotFoundError):  # the file locked must be the one at the path (a releaser unlinks)
                if os.fstat(fd).st_ino == os.lstat(self.path).st_ino:
                    break
            os.close(fd)
        try:
            with naming(self.path):
                os.ftruncate(fd, 0)
                os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode())
        except OSError:  # a full disk: the lock file goes (it is ours: we hold its lock), the error names it
            self.path.unlink(missing_ok=True)
            os.close(fd)
            raise
        self._fd = fd
        _HELD.add(str(self.path.resolve()))
        return self

    @staticmethod
    def held_here(target: str | Path) -> bool:
        """Whether this process holds the lock of ``target`` (``target.lock``) right now."""
        return str(WriterLock(target).path.resolve()) in _HELD

    def release(self) -> None:
        if self._fd is None:
            return
        _HELD.discard(str(self.path.resolve()))
        self.path.unlink(missing_ok=True)
        os.close(self._fd)  # closing releases the flock
        self._fd = None

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
