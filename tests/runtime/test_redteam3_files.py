"""Issue 49 (third red team), the files a run leaves: a hold whose descriptors were closed at the start
(``MLMPROB_HOLD=1:2:0`` with standard input closed: item 8) lets the run finish with its summary, and a full
disk (item 10: simulated with ``RLIMIT_FSIZE``, under which a write past the limit fails as on a full disk) is
one line naming the file that could not be written, leaving no temporary file and no lock, in every output
format; a run reading standard input (item 11) reads its spooled copy through its descriptor, the copy's name
removed at once, so no kill leaves a copy behind."""

from __future__ import annotations

import errno
import io
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from held import Held

from mlmprob.cli import main
from mlmprob.runtime.hold import HOLD_ENV
from mlmprob.runtime.writers import meta_path, open_writer, read_results

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX descriptors and resource limits"),
]
SRC = str(Path(__import__("mlmprob").__file__).resolve().parents[1])  # the subprocesses run this mlmprob
AA = "ACDEFGHIKLMNPQRSTVWY"
FASTA = "".join(f">s{i}\n{(AA[i % 20 :] + AA)[: 8 + i % 9]}\n" for i in range(24))


def _env(tmp: Path, **extra) -> dict:
    (tmp / "tmp").mkdir(exist_ok=True)
    path = SRC + os.pathsep + os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": path, "TMPDIR": str(tmp / "tmp"), "HF_HUB_OFFLINE": "1", **extra}


def _score(model: Path, inp: Path, out: Path, *more: str) -> list[str]:
    argv = ["score", str(inp), "--model", str(model), "--out", str(out), "--no-progress", "--batch-tokens", "64"]
    argv += ["--device", "cpu"]  # the resume (in this process) the same run whatever device an earlier test left
    return [*argv, *more]


def _leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith((".lock", ".tmp")))


@pytest.mark.parametrize("wfd", [1, 2])
def test_a_hold_on_descriptors_closed_at_the_start_lets_the_run_finish(wfd, tiny_bert_dir, tmp_path):
    """``MLMPROB_HOLD=1:WFD:0`` with standard input closed: the run's output lock took descriptor 0, the hold read
    it and closed it (and closed standard error when WFD was 2): exit 1 with no summary (or 2, 'Bad file
    descriptor'). Now descriptor 0 is no controller's (it was closed at the start): the run goes on; WFD, a
    standard stream, says 'held' and stays open."""
    inp, out = tmp_path / "in.fasta", tmp_path / "o.jsonl"
    inp.write_text(FASTA)
    r = subprocess.run(
        [sys.executable, "-m", "mlmprob", *_score(tiny_bert_dir, inp, out)],
        env=_env(tmp_path, **{HOLD_ENV: f"1:{wfd}:0"}),
        preexec_fn=lambda: os.close(0),  # standard input closed, as `0<&-`
        capture_output=True,
        text=True,
        timeout=300,
    )
    held, said = (r.stdout, r.stderr) if wfd == 1 else (r.stderr, r.stderr)
    assert r.returncode == 0, r.stderr
    assert held.splitlines()[0].startswith("held ") and said.splitlines()[-1].startswith("scored 24 sequences")
    assert len(list(read_results(out))) == 24 and json.loads(meta_path(out).read_text())["complete"] is True
    assert _leftovers(tmp_path) == []


def _no_room(limit: int):
    def at_start() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    return at_start


def _run_out_of_room(cmd: list[str], env: dict, limit: int | None) -> subprocess.CompletedProcess:
    """``cmd`` with files limited to ``limit`` bytes from its start; ``None``: held after its first committed rows,
    then limited to 1 byte (the disk fills up in the middle of the run)."""
    if limit is not None:
        return subprocess.run(cmd, env=env, preexec_fn=_no_room(limit), capture_output=True, text=True, timeout=300)
    hold = Held(1)
    pipes = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc = hold.popen(cmd, env=env, preexec_fn=_no_room(resource.RLIM_INFINITY), **pipes)
    try:
        hold.wait(what=lambda: proc.stderr.read())
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (1, resource.RLIM_INFINITY))
        hold.release()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        hold.close()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.parametrize(
    "kind, limit",
    [("tsv", 0), ("parquet", 300), ("jsonl", 1000), ("jsonl", None), ("tsv", None), ("parquet", None)],
    ids=[
        "tsv-no-room",
        "parquet-room-for-the-lock",
        "jsonl-room-for-the-meta",
        "jsonl-fills",
        "tsv-fills",
        "parquet-fills",
    ],
)
def test_a_full_disk_is_one_line_naming_the_file_and_leaves_no_lock_or_temporary_file(
    kind, limit, tiny_bert_dir, tmp_path, capsys
):
    """Before: TSV said 'cannot read or write: No space left on device' (no file) and left x.tsv.lock (its pid
    could not be written); Parquet left x.parquet.meta.json.tmp; a failed append left the lock (the close
    flushed the failed write again before releasing it). A run that committed no row leaves nothing; one that
    did is resumed to the end."""
    inp, folder = tmp_path / "in.fasta", tmp_path / "o"
    inp.write_text(FASTA)
    folder.mkdir()
    out = folder / f"x.{kind}"
    r = _run_out_of_room([sys.executable, "-m", "mlmprob", *_score(tiny_bert_dir, inp, out)], _env(tmp_path), limit)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1, r.stderr
    assert err[0].startswith(f"error: cannot read or write {folder}/x.{kind}") and "File too large" in err[0], err
    assert _leftovers(folder) == []
    if limit is not None:
        assert list(folder.iterdir()) == []  # nothing committed: nothing left
        return
    assert json.loads(meta_path(out).read_text())["complete"] is False
    assert main([*_score(tiny_bert_dir, inp, out), "--resume"]) == 0, capsys.readouterr().err
    assert sorted(r["id"] for r in read_results(out)) == sorted(f"s{i}" for i in range(24))
    assert _leftovers(folder) == []


def test_a_parquet_join_that_fails_keeps_the_parts_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    """The parts are committed, the joined file cannot be written (a full disk): ``x.parquet.tmp`` goes, the
    parts stay for a resume, the lock is released, and the error names the file."""
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "x.parquet"
    writer = open_writer(out, config={"seed": 0}, part_rows=2)
    writer.write([{"id": f"r{i}", "v": float(i)} for i in range(4)])

    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    with pytest.raises(OSError) as e:
        with writer:
            writer.close(complete=True)
    assert e.value.filename == str(tmp_path / "x.parquet.tmp") and e.value.errno == errno.ENOSPC
    assert _leftovers(tmp_path) == [] and not out.exists()
    assert len(list((tmp_path / "x.parquet.parts").glob("part-*.parquet"))) == 1
    assert json.loads(meta_path(out).read_text())["complete"] is False
    monkeypatch.undo()
    with open_writer(out, resume=True, config={"seed": 0}) as again:
        again.close(complete=True)
    assert [r["id"] for r in read_results(out)] == ["r0", "r1", "r2", "r3"]


def _copies_named(pid: int) -> list[str]:
    """The names of the spooled copies that process ``pid`` has open (``... (deleted)`` once their name is gone)."""
    names = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]  # the copy, and a reader of it
    return sorted({Path(n).name for n in names if Path(n).name.startswith("mlmprob-")})


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="without /proc a copy keeps its name")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_held_runs_copy_of_stdin_has_no_name_and_dies_with_it(sig, tiny_bert_dir, tmp_path):
    """Held at its first committed row, the run reads its copy of standard input through its descriptor, the
    copy's name already gone: neither SIGKILL nor SIGTERM leaves a copy (before, a SIGKILL left it for the next
    command's start to sweep)."""
    inp, out, tmp = tmp_path / "in.fasta", tmp_path / "o.jsonl", tmp_path / "tmp"
    inp.write_text(FASTA)
    hold = Held(1)
    with open(inp, "rb") as stdin:
        argv = [sys.executable, "-m", "mlmprob", *_score(tiny_bert_dir, Path("-"), out), "--format", "fasta"]
        proc = hold.popen(argv, env=_env(tmp_path), stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        hold.wait(what=lambda: proc.stderr.read().decode())
        held = _copies_named(proc.pid)
        assert len(held) == 1 and held[0].startswith(f"mlmprob-stdin-{proc.pid}-"), held
        assert held[0].endswith(" (deleted)") and list(tmp.glob("mlmprob-*")) == []  # open, and nameless
        proc.send_signal(sig)
        assert proc.wait(timeout=120) == -sig
        assert list(tmp.glob("mlmprob-*")) == []  # nothing left for the next command to sweep
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
        hold.close()


def test_a_named_copy_of_a_live_process_survives_the_sweep(tmp_path, monkeypatch):
    """Without /proc (elsewhere than Linux) a copy keeps its name under its maker's lock: a sweep (another command's
    start) cannot take the lock and leaves it; its maker removes it."""
    from mlmprob.runtime import spool

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(spool, "_unnamed", lambda fd, path: None)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FASTA.encode())))
    copy = spool.copy_of("-")
    try:
        assert copy.parent == tmp_path and copy.read_text() == FASTA
        with monkeypatch.context() as m:
            m.setattr(spool, "_copies", {})  # as another process sees it: not its own
            assert spool.sweep(tmp_path) == [] and copy.exists()
    finally:
        spool.remove(copy)
    assert list(tmp_path.glob("mlmprob-*")) == []


def test_no_usable_temporary_folder_is_one_line_for_a_run_reading_stdin(tiny_bert_dir, monkeypatch, capsys):
    """Every candidate temporary folder full: the start's sweep raised 'cannot read or write: No usable temporary
    directory ...' for every command; now the sweep has nothing to do, and a copy of stdin says what to set."""

    def full() -> str:
        raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found in ['/tmp']")

    monkeypatch.setattr(tempfile, "gettempdir", full)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FASTA.encode())))
    assert main(["score", "-", "--model", str(tiny_bert_dir), "--no-progress"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: cannot copy standard input: No usable temporary directory found in ['/tmp'] (set TMPDIR to a folder "
        "with room)"
    ]
