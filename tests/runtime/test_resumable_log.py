"""The one resumable log (``mlmprob.runtime.log``): the lock against a second writer, the stored
configuration a resume must match, commits flushed and fsync-ed, a torn last line trimmed, one reader."""

import json
import os

import pytest

from mlmprob.errors import MLMProbError
from mlmprob.runtime import log as logmod
from mlmprob.runtime.config_check import ConfigMismatch, check_command, check_config
from mlmprob.runtime.lock import OutputLocked, WriterLock
from mlmprob.runtime.log import (
    ResumableLog,
    RunMeta,
    append_record,
    read_lines,
    read_log,
    trim_torn_line,
)

# -- the reader --------------------------------------------------------------------------------------------


def test_cut_last_line_is_skipped_and_trimmed(tmp_path):
    p = tmp_path / "r.jsonl"
    assert list(read_log(p)) == [] and not p.exists()
    p.write_text('{"a": 1}\n\n[2, 3]\n{"a": ')
    assert list(read_log(p)) == [{"a": 1}, [2, 3]]
    assert p.read_text() == '{"a": 1}\n\n[2, 3]\n{"a": '  # reading changes nothing
    assert trim_torn_line(p) and p.read_text() == '{"a": 1}\n\n[2, 3]\n'
    assert not trim_torn_line(p) and p.read_text() == '{"a": 1}\n\n[2, 3]\n'
    p.write_text('{"a": 1}\n{"a": 2}')  # a last line without its newline is not committed, even if whole
    assert list(read_log(p)) == [{"a": 1}]
    p.write_text("x" * 200_000)  # a torn line longer than the block the trim reads back
    assert trim_torn_line(p) and p.read_text() == ""


@pytest.mark.parametrize("text", ['{"a": 1}\n{"a": \n{"a": 2}\n', '{"a": 1}\n{"a": \n', "nonsense\n"])
def test_damaged_line_is_an_error_naming_it(tmp_path, text):
    p = tmp_path / "r.jsonl"
    p.write_text(text)
    line = 1 if text.startswith("nonsense") else 2
    with pytest.raises(MLMProbError, match=f"r.jsonl line {line} is damaged"):
        list(read_log(p))
    with pytest.raises(MLMProbError, match=f"r.jsonl line {line} is damaged"), ResumableLog(p) as log:
        log.done(lambda r: r["a"])
    assert not WriterLock.held_here(p)


def test_command_logs_drop_a_cut_line_before_appending(tmp_path):
    from experiments.cdr_h3 import _append_run
    from experiments.cdr_h3_report import _runs

    (tmp_path / "runs.jsonl").write_text('{"command": "a"}\n{"command": "x", "wa')
    _append_run(tmp_path, {"command": "y"})
    assert _runs(tmp_path) == [{"command": "a"}, {"command": "y"}]
    assert not (tmp_path / "runs.jsonl.lock").exists()


# -- the log -----------------------------------------------------------------------------------------------


def test_resume_trims_the_torn_line_and_knows_what_is_done(tmp_path):
    p = tmp_path / "r.jsonl"
    with ResumableLog(p) as log:
        log.append({"id": "a", "x": float("nan")}, {"id": "b", "x": float("inf")})
    p.write_bytes(p.read_bytes() + b'{"id": "c", "x": 1')  # a kill in the middle of a line
    with ResumableLog(p) as log:
        assert log.done(lambda r: r["id"]) == {"a", "b"}
        log.append({"id": "c", "x": 1.0})
    assert p.read_text() == '{"id": "a", "x": null}\n{"id": "b", "x": null}\n{"id": "c", "x": 1.0}\n'
    assert list(read_lines(p))[2] == '{"id": "c", "x": 1.0}'
    with pytest.raises(MLMProbError, match="exists; pass --resume"):
        ResumableLog(p, resume=False)
    append_record(p, {"id": "d"})
    assert [r["id"] for r in read_log(p)] == ["a", "b", "c", "d"]


def test_a_second_writer_is_refused_until_the_first_closes(tmp_path):
    p = tmp_path / "r.jsonl"
    log = ResumableLog(p)
    assert WriterLock.held_here(p) and (tmp_path / "r.jsonl.lock").exists()
    with pytest.raises(OutputLocked, match=r"r.jsonl is being written by another process \(pid \d+ on "):
        ResumableLog(p)
    with pytest.raises(OutputLocked):
        append_record(p, {"id": "x"})
    log.close()
    assert not WriterLock.held_here(p) and not (tmp_path / "r.jsonl.lock").exists()
    ResumableLog(p).close()
    with WriterLock(p):  # a caller holding the lock opens without it
        ResumableLog(p, lock=False).close()


def test_every_commit_is_flushed_and_fsynced(tmp_path, monkeypatch):
    p = tmp_path / "r.jsonl"
    seen = []
    real = os.fsync

    def fsync(fd):
        seen.append(p.read_text() if p.exists() else None)  # what is on disk when fsync is asked
        real(fd)

    monkeypatch.setattr(logmod.os, "fsync", fsync)
    with ResumableLog(p) as log:
        log.append({"i": 0})
        log.append({"i": 1}, {"i": 2})  # one commit: one fsync
        log.append_lines([])  # nothing to commit: no fsync
    assert seen == ['{"i": 0}\n', '{"i": 0}\n{"i": 1}\n{"i": 2}\n']
    p.write_text('{"i": 0}\n{"i"')
    seen.clear()
    ResumableLog(p).close()  # the trim is durable too
    assert seen == ['{"i": 0}\n']


def test_drop_tail_removes_a_group_a_kill_cut_short(tmp_path):
    p = tmp_path / "r.jsonl"
    with ResumableLog(p) as log:
        log.append(*({"unit": u, "chain": c} for u in ("a", "b") for c in (0, 1)), {"unit": "c", "chain": 0})
    with ResumableLog(p) as log:
        assert log.drop_tail(lambda r: r["unit"] in {"a", "b"}) == 1
        assert log.drop_tail(lambda r: True) == 0
        log.append({"unit": "c", "chain": 0}, {"unit": "c", "chain": 1})
    assert [(r["unit"], r["chain"]) for r in read_log(p)] == [(u, c) for u in "abc" for c in (0, 1)]


# -- the stored configuration ------------------------------------------------------------------------------


def test_one_config_check_names_every_differing_key(tmp_path):
    check_config("o", None, {"a": 1})  # nothing stored (an older output): nothing to check
    check_config("o", {"t": (1, 2), "x": float("nan")}, {"t": [1, 2], "x": None})  # as read back from JSON
    with pytest.raises(ConfigMismatch) as e:
        check_config("out.jsonl", {"seed": 0, "m": {"k": 1, "j": 2}, "old": 1}, {"seed": 1, "m": {"k": 2, "j": 2}})
    assert str(e.value) == (
        "cannot resume out.jsonl: it holds results of a different configuration, written with "
        "m.k=1, old=1, seed=0; this run has m.k=2, old=None, seed=1; use the same options or "
        "another --out"
    )
    check_config("o", {"sha1": "x", "n": 1}, {"sha1": "x", "n": 2}, keys=("sha1",))
    with pytest.raises(ConfigMismatch, match=r"written with ids=\[0, 1, 2, 3, .*\.\.\.; this run"):
        check_config("o", {"ids": list(range(100))}, {"ids": []})  # long values are shortened


def test_another_commands_output_is_named_before_any_other_difference():
    check_command("o", {"command": "score"}, {"command": "score"})
    check_command("o", {}, {"command": "score"})  # an output that does not say: the other checks decide
    with pytest.raises(
        ConfigMismatch, match="^cannot resume o: it holds results of mlmprob score, not of mlmprob design"
    ):
        check_config("o", {"command": "score", "seed": 0}, {"command": "design", "seed": 1})


def test_config_in_a_side_file(tmp_path):
    p, meta = tmp_path / "r.jsonl", RunMeta(tmp_path / "r.jsonl.meta.json")
    with ResumableLog(p, config={"model": "m", "seed": 1}, meta=meta) as log:
        log.append({"id": "a"})
    assert json.loads(meta.path.read_text()) == {"config": {"model": "m", "seed": 1}}
    with pytest.raises(ConfigMismatch, match="written with seed=1; this run has seed=2"):
        ResumableLog(p, config={"model": "m", "seed": 2}, meta=meta)
    assert not WriterLock.held_here(p)  # a refused open leaves nothing held
    whole = RunMeta(tmp_path / "config.json", key=None, indent=1)
    with ResumableLog(tmp_path / "g.jsonl", config={"n": 3}, meta=whole) as log:
        log.append({"unit": "u"})
    assert whole.path.read_text() == '{\n "n": 3\n}\n' and whole.config() == {"n": 3}
    with pytest.raises(ConfigMismatch, match="written with n=3; this run has n=4"):
        ResumableLog(tmp_path / "g.jsonl", config={"n": 4}, meta=whole)


def test_config_in_a_header_line(tmp_path):
    p = tmp_path / "run.jsonl"
    head = {"type": "header", "config": {"top_p": 1.0}, "ids": [1, 2]}
    with ResumableLog(p, config=head, header=True) as log:
        log.append({"epoch": 0})
    p.write_text(p.read_text() + '{"epoch": 1, "x')
    with ResumableLog(p, config=head, header=True) as log:
        assert log.header == head and list(log.records()) == [{"epoch": 0}]
    with pytest.raises(ConfigMismatch, match="written with config.top_p=1.0; this run has config.top_p=0.9"):
        ResumableLog(p, config={**head, "config": {"top_p": 0.9}}, header=True)
    p.write_text('{"type": "hea')  # a header cut by a kill: the log starts anew
    with ResumableLog(p, config=head, header=True) as log:
        assert log.header == head and list(log.records()) == []
    assert list(read_log(p)) == [head]
