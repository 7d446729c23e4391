"""The five streaming commands (``score``, ``variants``, streamed ``sample``, ``joints``, streamed ``infill``)
run through the one runner, ``mlmprob.runtime.command.run_command``, and so share its guarantees: shards
merged equal one run, a resume after a cut line equals one run, a second writer is refused, and the
progress bar's total is the shard's number of units. Tiny random models of conftest."""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import mlmprob.runtime.command as command
from mlmprob.cli import main
from mlmprob.runtime.lock import WriterLock
from mlmprob.runtime.writers import read_results

pytestmark = pytest.mark.usefixtures("one_thread")
AA = "ACDEFGHIKLMNPQRSTVWY"
WT = "MKTAYIAKQRQIS"
TIMES = ("seconds", "seconds_forward", "seconds_total")


@dataclass(frozen=True)
class Case:
    """A command line (``argv(inp, out, *extra)``), its result file under ``out`` and its number of units."""

    name: str
    argv: Callable[..., list[str]]
    units: int
    folder: bool = False  # --out is a folder (joints): the result file is OUT/pairs.jsonl

    def result(self, out: Path) -> Path:
        return out / "pairs.jsonl" if self.folder else out


def _seqs(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(AA) for _ in range(rng.randint(5, 10))) for _ in range(n)]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("stream_inputs")
    (d / "seqs.fasta").write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(_seqs(6, 0))))
    (d / "few.fasta").write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(_seqs(4, 1))))
    gapped = [s[:4] + " _ _ " + s[4:] for s in _seqs(5, 2)]
    (d / "gaps.fasta").write_text("".join(f">g{i}\n{s}\n" for i, s in enumerate(gapped)))
    with open(d / "dms.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mutant"])
        for m in ["A4C", "A4C:Q11E", "K2E", "T3W", "M1A:Y5F", "I6V"]:
            w.writerow([m])
    return d


def _cases(tiny: Path, esm: Path, d: Path) -> dict[str, Case]:
    cpu = ("--device", "cpu")
    return {
        c.name: c
        for c in [
            Case(
                "score",
                lambda out, *x: ["score", str(d / "seqs.fasta"), "--model", str(tiny), *cpu, "--out", str(out), *x],
                6,
            ),
            Case(
                "variants",
                lambda out, *x: [
                    "variants",
                    str(d / "dms.csv"),
                    "--wild-type",
                    WT,
                    "--model",
                    str(esm),
                    *cpu,
                    "--methods",
                    "wt_marginals,masked_marginals",
                    "--out",
                    str(out),
                    *x,
                ],
                6,
            ),
            Case(
                "sample",
                lambda out, *x: [
                    "sample",
                    "--input",
                    str(d / "few.fasta"),
                    "--model",
                    str(tiny),
                    *cpu,
                    "--chains",
                    "2",
                    "--epochs",
                    "2",
                    "--burn-in",
                    "0",
                    "--out",
                    str(out),
                    *x,
                ],
                4,
            ),
            Case(
                "joints",
                lambda out, *x: [
                    "joints",
                    "--data",
                    str(d / "seqs.fasta"),
                    "--model",
                    str(tiny),
                    *cpu,
                    "--n-pairs",
                    "2",
                    "--top-k",
                    "4",
                    "--ag-steps",
                    "5",
                    "--out",
                    str(out),
                    *x,
                ],
                4,
                folder=True,
            ),
            Case(
                "infill",
                lambda out, *x: [
                    "infill",
                    "--input",
                    str(d / "gaps.fasta"),
                    "--model",
                    str(tiny),
                    *cpu,
                    "-k",
                    "2",
                    "--out",
                    str(out),
                    *x,
                ],
                5,
            ),
        ]
    }


NAMES = ("score", "variants", "sample", "joints", "infill")


@pytest.fixture(scope="module")
def cases(tiny_bert_dir, esm_dir, inputs):
    return _cases(tiny_bert_dir, esm_dir, inputs)


@pytest.fixture
def runs(monkeypatch):
    """Every run_command call of the test: its declaration, options and result (the progress total included)."""
    seen = []
    real = command.run_command

    def spy(spec, opts):
        done = real(spec, opts)
        seen.append((spec, opts, done))
        return done

    monkeypatch.setattr(command, "run_command", spy)
    return seen


def _out(case: Case, path: Path) -> Path:
    return path if case.folder else path.with_suffix(".jsonl")


_REFERENCE: dict[str, list[dict]] = {}


def _reference(case: Case, tmp_path_factory) -> list[dict]:
    if case.name not in _REFERENCE:
        out = _out(case, tmp_path_factory.mktemp(f"ref_{case.name}") / "one")
        assert main(case.argv(out, "--no-progress")) == 0
        _REFERENCE[case.name] = list(read_results(case.result(out)))
    return _REFERENCE[case.name]


def _same(rows: list[dict], ref: list[dict], tol: float = 1e-5) -> None:
    """The same rows in the same order, floats within ``tol`` (timings ignored)."""
    assert [r["id"] for r in rows] == [r["id"] for r in ref]
    for a, b in zip(rows, ref):
        _close(
            {k: v for k, v in a.items() if k not in TIMES}, {k: v for k, v in b.items() if k not in TIMES}, tol, a["id"]
        )


def _close(a, b, tol, where):
    if isinstance(b, dict):
        assert isinstance(a, dict) and a.keys() == b.keys(), where
        for k in b:
            _close(a[k], b[k], tol, (where, k))
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), where
        for x, y in zip(a, b):
            _close(x, y, tol, where)
    elif isinstance(b, float) and not isinstance(a, bool):
        assert isinstance(a, (int, float)) and (math.isclose(a, b, abs_tol=tol) or a == b), (where, a, b)
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize("name", NAMES)
def test_the_command_runs_through_the_one_runner_and_shards_merge_to_one_run(
    name, cases, runs, tmp_path, tmp_path_factory, capsys
):
    case = cases[name]
    ref = _reference(case, tmp_path_factory)
    assert len({r["id"] for r in ref}) == len(ref) > 0
    runs.clear()
    parts = []
    for i in (1, 2):
        out = _out(case, tmp_path / f"part{i}")
        assert main(case.argv(out, "--shard", f"{i}/2", "--no-progress")) == 0
        parts.append(case.result(out))
    assert [opts.shard.index for _, opts, _ in runs] == [1, 2]  # both went through run_command
    assert all(spec.config["command"] == name for spec, _, _ in runs)
    merged = tmp_path / "all.jsonl"
    assert main(["merge", "--out", str(merged), *map(str, parts)]) == 0
    capsys.readouterr()
    rows = list(read_results(merged))  # input order, as one process writes it
    assert [r["id"] for r in rows] == [r["id"] for r in ref]
    by_id = lambda r: r["id"]  # noqa: E731
    _same(sorted(rows, key=by_id), sorted(ref, key=by_id))


@pytest.mark.parametrize("name", NAMES)
def test_a_resume_after_a_cut_line_equals_one_run(name, cases, runs, tmp_path, tmp_path_factory, capsys):
    case = cases[name]
    ref = _reference(case, tmp_path_factory)
    out = _out(case, tmp_path / "cut")
    assert main(case.argv(out, "--no-progress")) == 0
    path = case.result(out)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 2])  # a row cut by a kill
    capsys.readouterr()
    assert main(case.argv(out, "--resume", "--no-progress")) == 0
    _same(list(read_results(path)), ref)
    assert runs[-1][2].already >= 1 and runs[-1][2].written == len(ref) - 3


@pytest.mark.parametrize("name", NAMES)
def test_a_second_writer_is_refused(name, cases, tmp_path, capsys):
    case = cases[name]
    out = _out(case, tmp_path / "busy")
    if case.folder:
        out.mkdir()
    with WriterLock(case.result(out)):  # another process writes OUT
        assert main(case.argv(out, "--no-progress")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "being written by another process" in err and "\n" not in err


@pytest.mark.parametrize("name", NAMES)
def test_the_progress_total_is_the_shards_units(name, cases, runs, tmp_path, capsys):
    case = cases[name]
    out = _out(case, tmp_path / "bar")
    assert main(case.argv(out, "--shard", "2/3")) == 0  # progress on
    ((_, opts, done),) = runs
    assert opts.progress and done.total == sum(1 for k in range(case.units) if k % 3 == 1)
    assert done.units + done.already + len(done.skipped) == done.total


def test_no_command_imports_the_cli():
    """``cli`` imports every command (through importlib); a command importing ``cli`` back would be a loop
    the import graph cannot see. The shared options live in ``commands/common.py``."""
    import ast

    import mlmprob.commands

    folder = Path(mlmprob.commands.__file__).parent
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = ("." * node.level) + (node.module or "")
                names = [a.name for a in node.names]
                if target in ("..cli", "mlmprob.cli") or (target == ".." and "cli" in names):
                    found.append(path.name)
            elif isinstance(node, ast.Import) and any(a.name == "mlmprob.cli" for a in node.names):
                found.append(path.name)
    assert len(list(folder.glob("*.py"))) >= 9 and found == []
