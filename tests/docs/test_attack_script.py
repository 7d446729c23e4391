"""docs/reliability/attack.py (issue 35, item 5): how it judges a case, what it counts, and its size; no model
is loaded and no command is run here but two tiny Python subprocesses (a hang and a closed stdin)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from test_code_size import size_offenders

HERE = Path(__file__).resolve().parents[2] / "docs" / "reliability"
sys.path.insert(0, str(HERE))

import attack  # noqa: E402
import attack_harness as h  # noqa: E402


def test_the_attack_modules_obey_the_size_rule():
    files = sorted(HERE.glob("*.py"))
    assert {p.name for p in files} >= {
        "attack.py",
        "attack_harness.py",
        "attack_cases.py",
        "attack_limits.py",
        "attack_stdin.py",
    }
    offenders = [o for p in files for o in size_offenders(p.read_text(encoding="utf-8"), p.name)]
    assert not offenders, "size rule broken:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "expect, code, err, want",
    [
        ("refuse", 0, "", "silent"),
        ("refuse", 2, "error: the input changed", "ok"),
        ("refuse", 2, "error: the weights changed", "misleading"),
        ("refuse", 2, "warning: x\nerror: the input changed", "ok"),
        ("refuse", 2, "scored 5\nerror: the input changed", "wrong-refusal"),
        ("refuse", 1, "Traceback (most recent call last):\n  ...", "traceback"),
        ("refuse", None, "", "hang"),
        ("refuse", -9, "", "killed (signal 9)"),
        ("any", 0, "", "ok"),
        ("any", 2, "error: the input changed", "ok"),
        ("any", 2, "error: no", "misleading"),
        ("ok", 2, "error: no", "failed"),
    ],
)
def test_judge(expect, code, err, want):
    case = h.Case("c", [], expect=expect, says=("input|inputs",))
    assert h.judge(case, code, "", err) == want


def test_judge_checks_and_never():
    bad = lambda out, err: "wrong"  # noqa: E731
    assert h.judge(h.Case("c", [], expect="ok", check=bad), 0, "", "") == "failed: wrong"
    assert h.judge(h.Case("c", [], expect="any", check=bad), 0, "", "") == "silent: wrong"  # a wrong result
    assert h.judge(h.Case("c", [], never=("not found",)), 2, "", "error: x not found") == "misleading"


def test_a_guarded_file_altered_is_counted(tmp_path):
    victim, link, folder = tmp_path / "v.txt", tmp_path / "l.lock", tmp_path / "f"
    victim.write_text("mine\n")
    link.symlink_to(victim)
    folder.mkdir()
    (folder / "a.tmp").write_text("x")
    before = [h.snapshot(p) for p in (victim, link, folder, tmp_path / "absent")]
    assert before == [h.snapshot(p) for p in (victim, link, folder, tmp_path / "absent")]
    victim.write_text("pid 1\n")
    (folder / "a.tmp").unlink()
    (tmp_path / "absent").write_text("")
    after = [h.snapshot(p) for p in (victim, link, folder, tmp_path / "absent")]
    assert [a != b for a, b in zip(after, before)] == [True, False, True, True]


def test_a_subprocess_past_its_time_limit_is_a_hang(tmp_path, monkeypatch):
    # a stand-in for `python -m mlmprob`: the first reads a never-closed stdin, the second one that is closed
    monkeypatch.setattr(
        h, "cli", lambda argv, env=None: ([sys.executable, "-c", argv[0]], {**os.environ, **(env or {})})
    )
    code, _, _ = h.run_subprocess(["import sys; sys.stdin.read()"], h.NEVER_CLOSED, tmp_path, timeout=3)
    assert code is None
    code, out, _ = h.run_subprocess(["import sys; print(len(sys.stdin.read()))"], b"abc", tmp_path, timeout=60)
    assert (code, out.strip()) == (0, "3")


def test_the_table_counts_every_new_counter():
    records = [
        {"group": "identity", "case": "a", "outcome": "silent", "lost": 8},
        {"group": "files", "case": "b", "outcome": "altered", "altered": ["/x/victim"]},
        {"group": "files", "case": "c", "outcome": "traceback", "altered": ["/x/p.parquet"]},
        {"group": "limits", "case": "d", "outcome": "hang"},
        {
            "group": "kill",
            "case": "score .jsonl",
            "lost": 1,
            "duplicated": 0,
            "resume_status": 0,
            "second_writer": "refused",
        },
        {
            "group": "processes",
            "case": "SIGKILL of a run reading stdin, then another: spooled copies",
            "left": 2,
            "outcome": "2 spooled copies left",
        },
    ]
    lines = attack.summarize(records).split("\n\n")[0].splitlines()[2:]
    table = dict(line.strip("| ").split(" | ") for line in lines)
    assert table["bad- and odd-input cases tried"] == "4"
    assert table["silent acceptances"] == "1"
    assert table["tracebacks"] == "1"
    assert table["hangs (past the case's time limit) or killed (memory limit)"] == "1"
    assert table["files altered (a user's file, a symlink's target, a refused run's output)"] == "2"
    assert table["rows lost (kills, resumes, merges)"] == "9"
    assert table["spooled stdin copies left behind after SIGKILL"] == "2"


def test_every_issue_35_case_is_in_the_catalogue():
    text = "".join((HERE / f"{mod}.py").read_text() for mod in ("attack_cases", "attack_limits", "attack_stdin"))
    for what in (
        "another standard input",
        "input file was edited",
        "weights changed",
        "meta was removed",
        "3/3 missing",
        "cut by 2 rows",
        "torn last line",
        "same file",
        ".tsv part",
        "foreign JSONL",
        "foreign TSV",
        "foreign Parquet",
        "OUT.parts",
        "symlink",
        "--draft-k",
        "--remask-steps",
        "--top-p 1e-12",
        "check-model --seq",
        "not safetensors",
        "shapes",
        "optimizer.pt",
        "index.json",
        "made from stdin",
        "joints --data -",
        "spooled copies",
        "MLMPROB_HOLD malformed",
        "never-closed stdin",
        "--devices",
        "train --text /dev/stdin",
        "score /dev/stdin",
        "/dev/zero",
        "--saturate --limit",
        "pad token",
    ):
        assert what in text, what
