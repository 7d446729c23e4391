"""``mlmprob design`` streamed through the one runner: one row per chain whatever the shard or a resume (each chain's
randomness is a function of (seed, chain index) only), a second writer refused, a changed option on resume refused.
Two tiny random-weight BERTs saved as folders are the experts (seconds, not the embedded models)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import save_tiny_bert
from held import Held

from mlmprob.cli import main
from mlmprob.designing import mutant_string

PARENT = "EVQLVESGGGLV"
CHAINS = 6


@pytest.fixture(scope="module")
def experts(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("first")), save_tiny_bert(tmp_path_factory.mktemp("other"), 0.3)


def _args(experts, *extra) -> list[str]:
    first, other = experts
    argv = ["design", PARENT, "--expert", f"{first}:local:1", "--expert", f"{other}:raw:0.5"]
    argv += ["--chains", str(CHAINS), "--steps", "4", "--positions", "2-9", "--max-mutations", "3", "--hamming", "0.2"]
    return [*argv, "--forbid", "liabilities", "--device", "cpu", "--no-progress", "--seed", "7", *map(str, extra)]


def _lines(path) -> list[str]:
    return path.read_text().splitlines()


@pytest.fixture(scope="module")
def whole_out(experts, tmp_path_factory):
    """The uninterrupted run of the whole (mh)."""
    out = tmp_path_factory.mktemp("whole") / "all.jsonl"
    assert main(_args(experts, "--out", out)) == 0
    return out


@pytest.fixture(scope="module")
def whole(whole_out):
    """The uninterrupted run's JSONL lines."""
    return _lines(whole_out)


def test_rows_are_one_per_chain_with_terms_and_mutations(whole, whole_out):
    rows = [json.loads(line) for line in whole]
    assert [r["id"] for r in rows] == [f"chain{c}" for c in range(CHAINS)]
    for r in rows:
        assert r["mutant"] == mutant_string(PARENT, r["sequence"]) and r["mutations"] <= 3
        assert sum(k.startswith("energy_") for k in r) == 3 and r["in_constraints"] and r["model_rows"] > 0
    meta = json.loads(whole_out.with_name("all.jsonl.meta.json").read_text())
    config = meta.get("config", meta)
    assert config["command"] == "design" and config["steps"] == 4 and config["seed"] == 7
    assert config["parent"] == PARENT and len(config["experts"]) == 2 and len(config["identity"]["weights"]) == 2


@pytest.mark.parametrize("method", ["mh", "replica"])
def test_the_whole_run_is_its_two_shards_merged(experts, whole, tmp_path, method):
    extra = ["--method", "replica", "--temperatures", "1,2"] if method == "replica" else []
    if method == "replica":
        assert main(_args(experts, *extra, "--out", tmp_path / "all.jsonl")) == 0
        reference = _lines(tmp_path / "all.jsonl")
        ladders = [json.loads(line) for line in reference]
        assert all(r["rung_temperatures"] == [1.0, 2.0] and len(r["rung_swap_rate"]) == 1 for r in ladders)
        assert all(len(r["rung_acceptance"]) == 2 and r["temperature"] == 1.0 for r in ladders)
    else:
        reference = whole
    parts = []
    for i in (1, 2):
        out = tmp_path / f"s{i}.jsonl"
        assert main(_args(experts, *extra, "--shard", f"{i}/2", "--out", out)) == 0
        parts += _lines(out)
    assert len(parts) == CHAINS
    assert sorted(parts, key=lambda line: json.loads(line)["chain"]) == reference  # byte for byte
    merged = tmp_path / "merged.jsonl"
    assert main(["merge", str(tmp_path / "s1.jsonl"), str(tmp_path / "s2.jsonl"), "--out", str(merged)]) == 0
    assert _lines(merged) == reference
    assert main(["merge", str(tmp_path / "s1.jsonl"), "--out", str(tmp_path / "half.jsonl")]) != 0  # a shard missing


def test_a_changed_option_on_resume_is_refused_in_one_line(experts, whole, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert main(_args(experts, "--out", out, "--chains", "2")) == 0
    capsys.readouterr()
    assert main(_args(experts, "--out", out, "--chains", "2", "--steps", "5", "--resume")) != 0
    err = capsys.readouterr().err.strip()
    assert "steps" in err and len(err.splitlines()) == 1, err
    assert _lines(out) == whole[:2]  # untouched; its rows are the first chains of the whole run


def test_a_killed_run_resumed_equals_the_uninterrupted_one(experts, whole, tmp_path, capsys):
    out = tmp_path / "k.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "mlmprob", "--threads", "1", *_args(experts, "--out", out)]
    held = Held(rows=2)
    proc = held.popen(cmd, env, stderr=subprocess.PIPE, text=True)
    try:
        assert held.wait(what=lambda: proc.stderr.read()) == 2
        assert _lines(out) == whole[:2]
        capsys.readouterr()
        assert main(_args(experts, "--out", out, "--resume")) == 2  # a second writer, while the first runs
        err = capsys.readouterr().err
        assert "being written by another process" in err and len(err.strip().splitlines()) == 1, err
        held.kill()
    finally:
        held.stop()
    capsys.readouterr()
    assert main(_args(experts, "--out", out, "--resume")) == 0, capsys.readouterr().err
    assert "(2 chains already there)" in capsys.readouterr().err
    assert _lines(out) == whole  # no loss, no duplicate, the same bytes


def test_worker_processes_give_the_same_rows(experts, whole, tmp_path, capsys):
    """Two spawned workers, each loading both experts once: the rows of one process, in chain order."""
    out = tmp_path / "w.jsonl"
    assert main(_args(experts, "--workers", "2", "--out", out)) == 0, capsys.readouterr().err
    assert _lines(out) == whole
    assert "6 chains designed on 2 x cpu" in capsys.readouterr().err
