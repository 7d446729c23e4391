"""Standard input and pipes are spooled once per command, and the copies go away on any exit (issue 35):
every command that takes ``-`` makes one copy and leaves none; ``joints --data -`` and ``train --text
/dev/stdin`` read their stream; a descriptor's name standing for a regular file gets that file's format; a
full temporary folder is named as such; the sweep of stale copies leaves other files alone. (A held run's copy
has no name, so a killed run leaves none: tests/runtime/test_redteam3_files.py.)"""

from __future__ import annotations

import errno
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from mlmprob.cli import main
from mlmprob.runtime.writers import read_results

pytestmark = pytest.mark.usefixtures("one_thread")
SRC = str(Path(__import__("mlmprob").__file__).resolve().parents[1])  # the subprocesses run this mlmprob
FASTA = b">a\nACDEFGHIK\n>b\nKLMNPQ\n>c\nACDKLMW\n"
WT = "MKTAYIAKQRQIS"


@pytest.fixture
def tmpdir_(tmp_path, monkeypatch):
    """The temporary folder of the copies, this test's own."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def _copies(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("mlmprob-"))


def _made_here(copy: Path) -> bool:
    """A copy this process made: read through its descriptor once its name is gone (Linux), else by its name."""
    if Path(f"/proc/{os.getpid()}/fd").is_dir():
        return str(copy.parent) == f"/proc/{os.getpid()}/fd"
    return copy.name.startswith(f"mlmprob-stdin-{os.getpid()}-")


def _commands(tmp_path, bert, esm):
    text = b"the cat sat on the mat\nand the dog sat too\na third line here\nand a fourth one\n"
    return {
        "score": (["score", "-", "--model", bert], FASTA),
        "sample": (
            [
                "sample",
                "--input",
                "-",
                "--model",
                bert,
                "--out",
                tmp_path / "s.jsonl",
                "--chains",
                "1",
                "--epochs",
                "1",
                "--burn-in",
                "0",
                "--device",
                "cpu",
            ],
            FASTA,
        ),
        "infill": (["infill", "--input", "-", "--model", bert, "-k", "2"], b">a\nAC__DE\n>b\nK_LM\n"),
        "variants": (
            [
                "variants",
                "-",
                "--format",
                "csv",
                "--wild-type",
                WT,
                "--model",
                esm,
                "--methods",
                "wt_marginals",
                "--device",
                "cpu",
            ],
            b"mutant\nA4C\nK2E\n",
        ),
        "joints": (
            [
                "joints",
                "--data",
                "-",
                "--model",
                bert,
                "--out",
                tmp_path / "j",
                "--n-pairs",
                "2",
                "--quiet",
                "--ag-max-steps",
                "20",
            ],
            FASTA,
        ),
        "train": (
            [
                "train",
                "--text",
                "-",
                "-",
                "--out",
                tmp_path / "t",
                "--steps",
                "1",
                "--hidden",
                "16",
                "--layers",
                "1",
                "--heads",
                "2",
                "--intermediate",
                "16",
                "--tokenizer-vocab-size",
                "60",
            ],
            text,
        ),
    }


@pytest.mark.parametrize("command", ["score", "sample", "infill", "variants", "joints", "train"])
def test_every_command_spools_standard_input_once_and_leaves_no_copy(
    command, tiny_bert_dir, esm_dir, tmp_path, tmpdir_, monkeypatch, capsys
):
    from mlmprob.runtime import spool

    argv, data = _commands(tmp_path, str(tiny_bert_dir), str(esm_dir))[command]
    made = []
    make = spool._make_copy
    monkeypatch.setattr(spool, "_make_copy", lambda *a: made.append(make(*a)) or made[-1])
    _stdin(monkeypatch, data)
    assert main([*map(str, argv), "--no-progress"]) == 0, capsys.readouterr().err
    assert len(made) == 1 and _made_here(made[0])
    assert _copies(tmpdir_) == [] and made[0] not in spool._copies  # its descriptor closed too


def test_joints_reads_its_data_from_standard_input(tiny_bert_dir, tmp_path, tmpdir_, monkeypatch, capsys):
    """Read twice before (the check, then the pair planner): 'no sequences in -'."""
    _stdin(monkeypatch, FASTA)
    out = tmp_path / "j"
    assert (
        main(
            [
                "joints",
                "--data",
                "-",
                "--format",
                "fasta",
                "--model",
                str(tiny_bert_dir),
                "--out",
                str(out),
                "--n-pairs",
                "2",
                "--quiet",
                "--no-progress",
                "--ag-max-steps",
                "20",
            ]
        )
        == 0
    ), capsys.readouterr().err
    assert len(list(read_results(out / "pairs.jsonl"))) == 4
    _stdin(monkeypatch, FASTA)  # the same data again: a resume (the stored name is '-', not the copy's)
    assert (
        main(
            [
                "joints",
                "--data",
                "-",
                "--format",
                "fasta",
                "--model",
                str(tiny_bert_dir),
                "--out",
                str(out),
                "--n-pairs",
                "2",
                "--quiet",
                "--no-progress",
                "--ag-max-steps",
                "20",
            ]
        )
        == 0
    ), capsys.readouterr().err


def test_train_reads_a_pipe_by_name(tmp_path, tmpdir_, capsys):
    """``train --text /dev/stdin`` (a pipe) said 'text file not found'; a FIFO is the same case by name."""
    fifo = tmp_path / "lines"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(b"the cat sat on the mat\nand the dog sat too\na third line here\n")

    t = threading.Thread(target=feed)
    t.start()
    try:
        assert (
            main(
                [
                    "train",
                    "--text",
                    str(fifo),
                    "--out",
                    str(tmp_path / "t"),
                    "--steps",
                    "1",
                    "--hidden",
                    "16",
                    "--layers",
                    "1",
                    "--heads",
                    "2",
                    "--intermediate",
                    "16",
                    "--tokenizer-vocab-size",
                    "60",
                    "--no-progress",
                ]
            )
            == 0
        ), capsys.readouterr().err
    finally:
        t.join(timeout=60)
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["step"] == 1 and _copies(tmpdir_) == []


@pytest.mark.parametrize(
    "name, body, ids",
    [
        ("x.fasta", FASTA, ["a", "b", "c"]),  # by the file's suffix
        ("seqs", FASTA, ["a", "b", "c"]),  # by its content
        ("x.jsonl", b'{"id": "j", "seq": "ACDE"}\n', ["j"]),
    ],
)
def test_a_descriptor_name_gets_the_format_of_its_file(name, body, ids, tiny_bert_dir, tmp_path, capsys):
    """``score /dev/stdin < x.fasta``: /dev/stdin is x.fasta, a regular file; its name said 'text' before."""
    path = tmp_path / name
    path.write_bytes(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert main(["score", f"/dev/fd/{fd}", "--model", str(tiny_bert_dir), "--no-progress"]) == 0, (
            capsys.readouterr().err
        )
    finally:
        os.close(fd)
    assert [json.loads(x)["id"] for x in capsys.readouterr().out.splitlines()] == ids


def test_a_full_temporary_folder_is_named(tiny_bert_dir, tmpdir_, monkeypatch, capsys):
    write = os.write

    def full(fd, data):
        if fd > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(fd, data)

    _stdin(monkeypatch, FASTA)
    with monkeypatch.context() as m:
        m.setattr(os, "write", full)
        assert main(["score", "-", "--model", str(tiny_bert_dir), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: the temporary folder {tmpdir_} is full: cannot copy standard input there (set TMPDIR "
        "to a folder with room)"
    ]
    assert _copies(tmpdir_) == []


@pytest.mark.parametrize("data", [b"", b"\n  \n"])
@pytest.mark.parametrize("fmt", [[], ["--format", "fasta"]])
def test_an_empty_standard_input_is_called_empty(data, fmt, tiny_bert_dir, tmpdir_, monkeypatch, capsys):
    """Red-team: an empty stdin said 'cannot tell its format' (and, with --format, 'no sequences found in -')."""
    _stdin(monkeypatch, data)
    assert main(["score", "-", *fmt, "--model", str(tiny_bert_dir), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no sequences found in standard input") and len(err.splitlines()) == 1, err
    assert _copies(tmpdir_) == []


def _env(tmpdir: Path) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "TMPDIR": str(tmpdir),
        "HF_HUB_OFFLINE": "1",
    }


def test_a_file_size_limit_names_the_temporary_folder_not_the_input(tiny_bert_dir, tmp_path):
    """``/dev/zero`` (a huge stream) where the copy cannot grow: the temporary folder is named, and no copy stays."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # noqa: E731
    r = subprocess.run(
        [sys.executable, "-m", "mlmprob", "score", "/dev/zero", "--format", "text", "--model", str(tiny_bert_dir)],
        env=_env(tmpdir),
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert (
        lines[0].startswith(f"error: cannot copy /dev/zero to the temporary folder {tmpdir}: ") and "TMPDIR" in lines[0]
    )
    assert _copies(tmpdir) == []


def test_the_sweep_leaves_other_names_alone(tmpdir_):
    from mlmprob.runtime import spool

    others = ["mlmprob-stdin-abc", "mlmprob-stdin-12", "mlmprob-pipex-1-ab", "notes.txt"]
    for name in others:
        (tmpdir_ / name).write_text("x")
    (tmpdir_ / "mlmprob-pipe-999999999-ab12").write_text("x")  # no process holds it: stale
    assert [p.name for p in spool.sweep(tmpdir_)] == ["mlmprob-pipe-999999999-ab12"]
    assert sorted(p.name for p in tmpdir_.iterdir()) == sorted(others)
