"""``MLMPROB_HOLD`` (issue 35): a malformed value is refused at the command's start, in one line, before
any output exists (it was refused only after the first commit); a held run whose standard input never ends
(it copies its input to the end before its first row, so it cannot be held) stops with one line when its
controller lets go, instead of waiting for ever."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from held import Held

from mlmprob.cli import main
from mlmprob.runtime.hold import HOLD_ENV

pytestmark = pytest.mark.usefixtures("one_thread")
SRC = str(Path(__import__("mlmprob").__file__).resolve().parents[1])  # the subprocess runs this mlmprob
FASTA = b">a\nACDEFGHIK\n>b\nKLMNPQ\n>c\nACDKLMW\n"


@pytest.mark.parametrize("value", ["x", "1:2", "1:-3:4", "a:b:c:d"])
def test_a_malformed_hold_is_refused_before_any_work(value, tiny_bert_dir, tmp_path, monkeypatch, capsys):
    inp = tmp_path / "in.fasta"
    inp.write_bytes(FASTA)
    out = tmp_path / "o.jsonl"
    monkeypatch.setenv(HOLD_ENV, value)
    assert main(["score", str(inp), "--model", str(tiny_bert_dir), "--out", str(out), "--no-progress"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fasta"]  # no output, meta or lock
    assert capsys.readouterr().err.splitlines() == [
        f"error: ${HOLD_ENV}={value!r}: give ROWS:WFD:RFD (three integers >= 0)"
    ]


def test_a_held_run_on_a_never_closed_stdin_ends_when_its_controller_lets_go(tiny_bert_dir, tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "TMPDIR": str(tmpdir),
        "HF_HUB_OFFLINE": "1",
    }
    hold = Held(1)
    proc = hold.popen(
        [
            sys.executable,
            "-m",
            "mlmprob",
            "score",
            "-",
            "--format",
            "fasta",
            "--model",
            str(tiny_bert_dir),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--no-progress",
        ],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        proc.stdin.write(FASTA)
        proc.stdin.flush()  # records, but no end of file: the run cannot reach its first row
        hold.release()  # the controller lets go (as when it dies)
        rc = proc.wait(timeout=240)
        err = proc.stderr.read().decode().strip().splitlines()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
        proc.stderr.close()
        hold.close()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: standard input had not ended when the run's controller let go (${HOLD_ENV})")
    assert list(tmpdir.iterdir()) == []
