"""Worker processes die with their parent: a ``kill -9`` of the main process of a ``--workers 2`` run
leaves no worker and no multiprocessing resource tracker behind. The run is held at a known row
(``MLMPROB_HOLD``), so the workers are up and working when the parent is killed."""

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from held import Held

from mlmprob.runtime.capacity import usable_cores

AA = "ACDEFGHIKLMNPQRSTVWY"
pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
    pytest.mark.skipif(usable_cores() < 2, reason="--workers 2 is capped to 1 on one core"),
]


def _children(pid: int) -> dict[int, str]:
    """pid -> command line of every live process whose parent is ``pid``."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, ppid = text.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            out[int(stat.parent.name)] = cmd
    return out


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _wait_exit(pids, limit: float) -> list[int]:
    """Wait (up to ``limit`` seconds, not a poll on progress: for deaths that must happen) until every
    process of ``pids`` has ended; returns those still alive. ``pids``: pid -> pidfd or None."""
    t0 = time.monotonic()
    left = dict(pids)
    while left and time.monotonic() - t0 < limit:
        fds = [fd for fd in left.values() if fd is not None]
        if fds:
            select.select(fds, [], [], 0.5)  # a pidfd reads ready when its process has ended
        else:
            time.sleep(0.2)
        left = {p: fd for p, fd in left.items() if not _gone(p)}
    return sorted(left)


def test_sigkill_of_the_parent_leaves_no_worker_behind(tiny_bert_dir, tmp_path):
    rng = random.Random(3)
    inp = tmp_path / "in.fasta"
    inp.write_text(
        "".join(f">s{i}\n{' '.join(rng.choice(AA) for _ in range(rng.randint(8, 30)))}\n" for i in range(200))
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "mlmprob",
        "--threads",
        "1",
        "score",
        str(inp),
        "--model",
        str(tiny_bert_dir),
        "--out",
        str(tmp_path / "out.jsonl"),
        "--workers",
        "2",
        "--no-progress",
        "--device",
        "cpu",
    ]
    held = Held(rows=32)  # the run holds once 32 rows are committed: both workers are up
    proc = held.popen(cmd, env, stderr=subprocess.PIPE, text=True)
    pidfds = {}
    try:
        held.wait(what=lambda: proc.stderr.read())
        children = _children(proc.pid)
        workers = [p for p, c in children.items() if "spawn_main" in c]
        assert len(workers) == 2, children
        for p in children:
            try:
                pidfds[p] = os.pidfd_open(p) if hasattr(os, "pidfd_open") else None
            except OSError:
                pidfds[p] = None
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
        left = _wait_exit(pidfds, limit=60)
        assert not left, {p: children[p] for p in left}  # workers and the resource tracker are gone
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p, fd in pidfds.items():  # what a failed check left behind
            if fd is not None:
                if not _gone(p):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                os.close(fd)
        held.close()
