"""Runs held at a known row (``MLMPROB_HOLD``, :mod:`mlmprob.runtime.hold`): a test that needs a run to be
in the middle of its output waits for the run to say it is there, instead of polling the output and
racing the machine's speed."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time

from mlmprob.runtime.hold import HOLD_ENV


class Held:
    """A run started with a hold at ``rows`` committed rows. :meth:`wait` returns once the run is held
    (or fails, with the run's stderr, when it ended first or took more than ``limit`` seconds);
    :meth:`release` lets it go on. ``start(env)`` starts the run with the extra environment and returns
    an object with ``poll()`` (a ``subprocess.Popen`` or a forked child)."""

    def __init__(self, rows: int):
        self.r_held, self.w_held = os.pipe()
        self.r_go, self.w_go = os.pipe()
        self.rows = rows
        self.fds = (self.w_held, self.r_go)
        self.env = {HOLD_ENV: f"{rows}:{self.w_held}:{self.r_go}"}
        self.proc = None
        self.committed = None

    def popen(self, cmd: list[str], env: dict, **kw) -> subprocess.Popen:
        self.proc = subprocess.Popen(cmd, env={**env, **self.env}, pass_fds=self.fds, **kw)
        self._close_child_ends()
        return self.proc

    def adopt(self, proc) -> None:
        """Use a run started by the caller (a fork that set :attr:`env` in its own environment)."""
        self.proc = proc
        self._close_child_ends()

    def _close_child_ends(self) -> None:
        for fd in self.fds:
            os.close(fd)

    def wait(self, limit: float = 300.0, what=lambda: "") -> int:
        """Block until the run is held; returns the rows it had committed then."""
        t0 = time.monotonic()
        buf = b""
        while not buf.endswith(b"\n"):
            ready, _, _ = select.select([self.r_held], [], [], 0.5)
            if ready:
                chunk = os.read(self.r_held, 4096)
                if not chunk:  # the run closed its end without being held: it ended
                    self.proc.wait() if hasattr(self.proc, "wait") else None
                    raise AssertionError(f"the run ended before it was held at {self.rows} rows: {what()}")
                buf += chunk
                continue
            assert self.proc.poll() is None, f"the run ended (rc {self.proc.poll()}) before row {self.rows}: {what()}"
            assert time.monotonic() - t0 < limit, f"the run was not held within {limit} s: {what()}"
        self.committed = int(buf.split()[2])
        return self.committed

    def release(self) -> None:
        """Let the held run go on (idempotent)."""
        if self.w_go is not None:
            os.close(self.w_go)
            self.w_go = None

    def close(self) -> None:
        self.release()
        if self.r_held is not None:
            os.close(self.r_held)
            self.r_held = None

    def kill(self) -> None:
        """Kill the held run (SIGKILL) and check that it died of it."""
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait() == -signal.SIGKILL

    def stop(self) -> None:
        """A test's cleanup (its ``finally``): the run killed and reaped if it still runs, then :meth:`close`."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.close()
