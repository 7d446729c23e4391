"""Progress of long design runs (issue 50, part 3): ``design(..., progress=True)`` draws a bar on stderr over the
chains' steps (a replica ladder's rungs one step) with the acceptance so far and the model rows read, and the rows do
not depend on it; ``mlmprob design`` shows one bar over every step of every chain by default, on stderr only (stdout
stays JSONL), moved step by step; ``--no-progress`` turns it off. A tiny random-weight BERT saved as a folder."""

from __future__ import annotations

import json

import pytest
import torch
from bar_recorder import recording_bars
from conftest import save_tiny_bert

from mlmprob import load_mlm
from mlmprob.cli import main
from mlmprob.designing import design

PARENT = "EVQLVESGGGLV"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def recorder(monkeypatch):
    return recording_bars(monkeypatch)


@pytest.mark.parametrize("method,extra", [("mh", {}), ("replica", {"temperatures": (1.0, 2.0, 4.0)})])
def test_the_api_bar_is_on_stderr_and_leaves_the_rows_as_they_were(tiny_dir, capsys, method, extra):
    mlm = load_mlm(str(tiny_dir))

    def run(progress):
        g = torch.Generator().manual_seed(0)
        return design(mlm, PARENT, chains=2, steps=3, method=method, generator=g, progress=progress, **extra)

    quiet = run(False)
    assert capsys.readouterr().err == ""
    shown = run(True)
    out = capsys.readouterr()
    assert shown.rows == quiet.rows and shown.stats == quiet.stats
    assert out.out == ""
    cold = shown.stats["temperatures"][0]  # the target's temperature, the bar's acceptance
    end = out.err.replace("\r", "\n").strip().splitlines()[-1]
    assert "6/6" in end and "step" in end, out.err  # 2 chains x 3 steps, whatever the rungs
    assert f"acceptance={cold['acceptance']:.2f}" in end and f"model_rows={shown.stats['model_rows']}" in end


def test_the_cli_bar_follows_every_step_on_stderr_only(tiny_dir, capsys):
    argv = ["design", PARENT, "--model", str(tiny_dir), "--chains", "1", "--steps", "3", "--device", "cpu"]
    assert main(argv) == 0
    out = capsys.readouterr()
    rows = [json.loads(line) for line in out.out.splitlines()]
    assert [r["id"] for r in rows] == ["chain0"]
    assert "3/3" in out.err and "step" in out.err and "acceptance=" in out.err and "model_rows=" in out.err
    assert main([*argv, "--no-progress"]) == 0
    quiet = capsys.readouterr()
    assert quiet.out == out.out
    assert "3/3" not in quiet.err and "acceptance=" not in quiet.err and "step" not in quiet.err


def test_the_cli_bar_moves_a_step_at_a_time_and_counts_what_a_resume_finds(tiny_dir, recorder, tmp_path, capsys):
    out = tmp_path / "d.jsonl"
    argv = ["design", PARENT, "--model", str(tiny_dir), "--chains", "2", "--steps", "3", "--device", "cpu"]
    assert main([*argv, "--out", str(out)]) == 0
    bar = recorder[-1]
    assert (bar.total, bar.unit, bar.disable) == (6, "step", False)
    assert [n for n in bar.updates if n] == [1] * 6  # every step of both chains as it happens
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert bar.shown[-1]["model_rows"] == sum(r["model_rows"] for r in rows)
    assert [s["model_rows"] for s in bar.shown] == sorted(s["model_rows"] for s in bar.shown)
    assert main([*argv, "--out", str(out), "--resume"]) == 0
    assert recorder[-1].updates == [3, 3] and "2 chains already there" in capsys.readouterr().err
    assert main([*argv, "--no-progress"]) == 0
    assert recorder[-1].disable
