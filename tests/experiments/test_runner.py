"""The one experiment runner (experiments/runner.py) on a toy experiment of three units."""

import json

import pytest

from experiments import runner
from mlmprob.runtime.lock import WriterLock
from mlmprob.runtime.log import read_log


class Toy(runner.Experiment):
    """Units a, b, c; unit u's record is ``{"unit": u, "value": ord(u)}``; ``--fail-at U`` raises inside U
    after the records before it were committed (a kill at a known point)."""

    prog = "toy"

    def __init__(self):
        self.ran: list[str] = []
        self.reports = 0

    def add_arguments(self, parser):
        parser.add_argument("--fail-at")
        parser.add_argument("--seed", type=int, default=0)

    def config(self, run):
        return {"seed": run.args.seed}

    def meta(self, run):
        return runner.RunMeta(run.out / "config.json")

    def units(self, run):
        return ["a", "b", "c"]

    def key(self, record):
        return record["unit"]

    def run_unit(self, run, unit):
        self.ran.append(unit)
        yield {"unit": unit, "part": 0}
        if unit == run.args.fail_at:
            raise RuntimeError("killed")
        yield {"unit": unit, "part": 1}

    def resume(self, run):
        # a unit is done when both its parts are there; a unit cut after its first part is dropped and redone
        parts = {}
        for r in run.log.records():
            parts.setdefault(r["unit"], set()).add(r["part"])
        cut = {u for u, p in parts.items() if p != {0, 1}}
        run.log.drop_tail(lambda r: r["unit"] not in cut)
        run.done = {u: True for u, p in parts.items() if u not in cut}

    def report(self, run):
        self.reports += 1
        recs = list(read_log(run.results))
        (run.out / "README.md").write_text("".join(f"{r['unit']}{r['part']}\n" for r in recs))


def records(out):
    return [(r["unit"], r["part"]) for r in read_log(out / "results.jsonl")]


ALL = [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0), ("c", 1)]


def test_a_run_records_every_unit_and_a_rerun_runs_none(tmp_path):
    out = tmp_path / "o"
    toy = Toy()
    assert runner.run_cli(toy, ["--out", str(out), "--threads", "1"]) == 0
    assert toy.ran == ["a", "b", "c"] and records(out) == ALL
    assert (out / "README.md").read_text() == "a0\na1\nb0\nb1\nc0\nc1\n"
    again = Toy()
    assert runner.run_cli(again, ["--out", str(out)]) == 0
    assert again.ran == [] and records(out) == ALL
    journal = list(read_log(out / "runs.jsonl"))
    assert [j["command"] for j in journal] == [f"python -m toy --out {out} --threads 1", f"python -m toy --out {out}"]
    assert all(isinstance(j["wall_s"], float) and j["threads"] >= 1 for j in journal)


def test_a_unit_killed_midway_is_redone_and_the_rest_kept(tmp_path):
    out = tmp_path / "o"
    toy = Toy()
    with pytest.raises(RuntimeError, match="killed"):
        runner.run_cli(toy, ["--out", str(out), "--fail-at", "b"])
    assert toy.ran == ["a", "b"] and records(out) == ALL[:3]  # b's first part committed, then the kill
    assert not (out / "runs.jsonl").exists()  # the run did not finish
    with open(out / "results.jsonl", "a") as f:  # and a torn line, as a kill mid-write leaves
        f.write('{"unit": "c", "pa')
    again = Toy()
    assert runner.run_cli(again, ["--out", str(out)]) == 0
    assert again.ran == ["b", "c"]  # a kept, b redone, c run
    assert records(out) == ALL


def test_a_second_writer_is_refused_with_one_line(tmp_path, capsys):
    out = tmp_path / "o"
    toy = Toy()
    with WriterLock(out / "results.jsonl"):
        assert runner.run_cli(toy, ["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"error: {out / 'results.jsonl'} is being written by another process"
    )
    assert toy.ran == []


def test_another_configuration_is_refused(tmp_path, capsys):
    out = tmp_path / "o"
    assert runner.run_cli(Toy(), ["--out", str(out)]) == 0
    toy = Toy()
    assert runner.run_cli(toy, ["--out", str(out), "--seed", "1"]) == 2
    assert "written with seed=0; this run has seed=1" in capsys.readouterr().err and toy.ran == []
    assert json.loads((out / "config.json").read_text())["config"] == {"seed": 0}


def test_report_only_regenerates_the_report_without_running_units(tmp_path):
    out = tmp_path / "o"
    assert runner.run_cli(Toy(), ["--out", str(out)]) == 0
    (out / "README.md").write_text("stale")
    toy = Toy()
    assert runner.run_cli(toy, ["--out", str(out), "--report-only"]) == 0
    assert toy.ran == [] and toy.reports == 1
    assert (out / "README.md").read_text() == "a0\na1\nb0\nb1\nc0\nc1\n"
    assert len(list(read_log(out / "runs.jsonl"))) == 1  # a report is not a run
