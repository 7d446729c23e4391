"""Crash safety of every command that writes results, with real processes and real signals.

For each writer (``sample`` streamed, ``sample`` folder, ``infill --input``, ``joints``, ``train``) one
test: compute the uninterrupted result in this process; start the same command as a real subprocess
(``python -m mlmprob --threads 1``); wait until its output shows a few units; freeze it (SIGSTOP) and start
a second writer on the same output (in this process), which must be refused with one ``error:`` line naming the output and
the process that holds it; SIGKILL the first run while it is still frozen (a kill no machine's speed can
race: an earlier version let the run go on for a random delay and failed on fast or loaded machines when the
run finished first); tear the last unit of the output in half (a torn last line,
or a half-written checkpoint folder); resume; and check that every unit is there exactly once with the
values of the uninterrupted run (within 1e-5; ``train``: the same loss curve and weights, exactly).
``test_sigkill_a_runner_then_resume`` does the same for ``score``, ``variants`` and the experiment runners
(``cdr_h3``, ``ground_truth``, ``variants_data``, the infill runner and the pivot sweep), each run forked
from this process instead of started with ``python -m`` (no Python start-up per run).

``MLMPROB_CRASH_ROUNDS=N`` repeats every case N times (seeds 0..N-1; the freeze falls where the watcher catches the run); ``MLMPROB_CRASH_LOG=F``
appends one JSON line per round to F (what was killed when, what was torn, the outcome) for
docs/reliability.md. Uses the tiny random BERT of conftest (one residue per word).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlmprob.cli import main
from mlmprob.runtime.writers import read_results

AA = "ACDEFGHIKLMNPQRSTVWY"
TOL = 1e-5
ROUNDS = range(int(os.environ.get("MLMPROB_CRASH_ROUNDS", "1")))
IGNORED = {"seconds", "seconds_forward", "seconds_total", "elapsed_s", "pairs_per_s"}  # wall-clock times
pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals (SIGSTOP, SIGKILL)"),
]


# -- the harness -----------------------------------------------------------------------------------------


@dataclass
class Case:
    """One writer under test. ``argv(out)`` is the command (after ``mlmprob``) writing to ``out``;
    ``units(out)`` counts the units committed so far; ``tear(out)`` damages the last unit the way a kill
    in the middle of writing it would (returns what it did); ``check(ref, got, stdout)`` compares a resumed output
    with the uninterrupted one."""

    name: str
    argv: Callable[[Path], list[str]]
    units: Callable[[Path], int]
    tear: Callable[[Path], str]
    check: Callable[[Path, Path, str], dict]
    resume: tuple[str, ...] = ()  # extra options of the resumed run (``--resume``)
    seen: int = 3  # units to see before the kill window is measured
    out_name: str = "out"


def _cli(argv: list[str]) -> tuple[list[str], dict]:
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MLMPROB_DTYPE": "float32",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env["PYTHONPATH"]]) if env.get("PYTHONPATH") else src
    return [sys.executable, "-m", "mlmprob", "--threads", "1", *map(str, argv)], env


class _Watcher(threading.Thread):
    """Polls a run's output and freezes the run (SIGSTOP) once ``n`` units are there, recording when the
    first and the ``n``-th unit appeared; runs beside the reference computation of the test."""

    def __init__(self, proc, units, n: int, limit: float = 180.0):
        super().__init__(daemon=True)
        self.proc, self.units, self.n, self.limit = proc, units, n, limit
        self.first = self.nth = None
        self.problem = None

    def run(self) -> None:
        t0 = time.monotonic()
        while True:
            k = self.units()
            now = time.monotonic()
            if k >= 1 and self.first is None:
                self.first = now
            if k >= self.n:
                self.proc.send_signal(signal.SIGSTOP)
                self.nth = now
                return
            if self.proc.poll() is not None:
                self.problem = f"the run ended (rc {self.proc.returncode}) after {k} units, before {self.n}"
                return
            if now - t0 > self.limit:
                self.problem = f"no progress in {self.limit} s: {k} units"
                return
            time.sleep(0.005)


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (user + system)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _in_process(argv: list) -> tuple[int, str, str]:
    """``mlmprob ARGV`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def crash_and_resume(case: Case, tmp_path: Path, seed: int) -> dict:
    """The whole scenario for one case and one kill moment; returns what happened. With
    ``MLMPROB_CRASH_LOG`` set, the record is also appended there, failed rounds included."""
    record = {"case": case.name, "seed": seed}
    cpu0 = _cpu_seconds()
    try:
        _scenario(case, tmp_path, seed, record)
        record["outcome"] = "ok"
    except BaseException as e:
        record["outcome"] = f"failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        raise
    finally:
        record["cpu_s"] = round(_cpu_seconds() - cpu0, 2)
        if os.environ.get("MLMPROB_CRASH_LOG"):
            with open(os.environ["MLMPROB_CRASH_LOG"], "a") as f:
                f.write(json.dumps(record) + "\n")
    return record


def _scenario(case: Case, tmp_path: Path, seed: int, record: dict) -> None:
    ref = tmp_path / "ref" / case.out_name
    out = tmp_path / "crash" / case.out_name
    out.parent.mkdir(parents=True, exist_ok=True)
    errfile = tmp_path / "first.stderr"
    cmd, env = _cli(case.argv(out))
    with errfile.open("w") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        watcher = _Watcher(proc, lambda: case.units(out), case.seen)
        watcher.start()
        t = time.monotonic()  # the uninterrupted run, in this process, while the other one starts
        rc, _, ref_err = _in_process(case.argv(ref))
        record["reference_s"] = round(time.monotonic() - t, 2)
        assert rc == 0, ref_err
        watcher.join(timeout=240)
        assert watcher.nth is not None, f"{watcher.problem}: {errfile.read_text()}"
        # a second writer on the same output (this process), while the first (frozen) holds it
        rc2, _, err2 = _in_process(case.argv(out) + list(case.resume))
        lines = err2.strip().splitlines()
        assert rc2 == 2 and len(lines) == 1, err2
        assert lines[0].startswith("error: ") and "being written by another process (pid" in lines[0], lines[0]
        assert str(out) in lines[0] and f"pid {proc.pid}" in lines[0], lines[0]
        record["second_writer"] = "refused"
        # the kill, while the run is still frozen where the watcher stopped it (a frozen process cannot
        # finish first, whatever the machine's speed: no sleep races the run)
        assert proc.poll() is None, "the run ended before the watcher froze it: make the case longer"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait()
    record["units_at_kill"] = case.units(out)
    record["torn"] = case.tear(out)

    t = time.monotonic()
    rc, stdout, stderr = _in_process(case.argv(out) + list(case.resume))
    record["resume_s"] = round(time.monotonic() - t, 2)
    assert rc == 0, stderr
    record.update(case.check(ref, out, stdout))


# -- helpers for JSON-lines outputs ----------------------------------------------------------------------


def _lines(path: Path, header: int = 0) -> int:
    """Complete lines of ``path`` after ``header`` lines (0 while it does not exist)."""
    try:
        return max(path.read_bytes().count(b"\n") - header, 0)
    except FileNotFoundError:
        return 0


def tear_last_line(path: Path, header: int = 0) -> str:
    """Cut the last line of ``path`` in half (no newline), as a kill in the middle of its write leaves it;
    a line the kill already tore is left as it is."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        return "torn by the kill"
    lines = data.splitlines(keepends=True)
    if len(lines) <= header:
        return "nothing to tear"
    last = lines[-1]
    path.write_bytes(b"".join(lines[:-1]) + last[: len(last) // 2])
    return "last line cut in half"


def assert_close(a, b, where: str = "") -> None:
    """Equal JSON values, numbers within ``TOL`` (absolute, or relative for large ones), None/NaN alike."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), (where, a, b)
        for k in a:
            if k not in IGNORED:
                assert_close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        if a is None or b is None or math.isnan(a) or math.isnan(b):
            assert (a is None or math.isnan(a)) and (b is None or math.isnan(b)), (where, a, b)
        else:
            assert abs(a - b) <= TOL * max(1.0, abs(a)), (where, a, b)
    else:
        assert a == b, (where, a, b)


def check_rows(ref: Path, got: Path, stdout: str = "") -> dict:
    """Every row of the uninterrupted output exactly once in the resumed one, with the same values."""
    want, rows = list(read_results(ref)), list(read_results(got))
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "a unit was written twice"
    assert sorted(ids) == sorted(r["id"] for r in want), "units missing or extra"
    by = {r["id"]: r for r in rows}
    for r in want:
        assert_close(r, by[r["id"]], r["id"])
    meta = json.loads(got.with_name(got.name + ".meta.json").read_text())
    assert meta["complete"] and meta["rows"] == len(want)
    assert not got.with_name(got.name + ".lock").exists()  # released (and removed) at the end
    return {"units": len(want)}


def _fasta(path: Path, n: int, lo: int, hi: int, seed: int) -> Path:
    rng = random.Random(seed)
    path.write_text(
        "".join(f">s{i}\n{' '.join(rng.choice(AA) for _ in range(rng.randint(lo, hi)))}\n" for i in range(n))
    )
    return path


# -- the cases -------------------------------------------------------------------------------------------


def sample_stream_case(model: Path, data: Path) -> Case:
    inp = _fasta(data / "sample.fasta", 10, 6, 14, 1)
    return Case(
        "sample streamed",
        lambda out: [
            "sample",
            "--model",
            model,
            "--input",
            inp,
            "--out",
            out,
            "--chains",
            "3",
            "--epochs",
            "2",
            "--burn-in",
            "1",
            "--block-size",
            "2",
            "--seed",
            "5",
            "--device",
            "cpu",
            "--no-progress",
        ],
        lambda out: _lines(out),
        tear_last_line,
        check_rows,
        resume=("--resume",),
        seen=9,
        out_name="chains.jsonl",
    )


def sample_folder_case(model: Path, data: Path) -> Case:
    rng = random.Random(2)
    seqs = [" ".join(rng.choice(AA) for _ in range(12)) for _ in range(3)]

    def check(ref: Path, got: Path, stdout: str) -> dict:
        from mlmprob.sampling.io import read_run

        (h1, want), (h2, recs) = read_run(ref / "run.jsonl"), read_run(got / "run.jsonl")
        assert h1 == h2
        assert [r.epoch for r in recs] == list(range(len(want))), "an epoch missing or written twice"
        for a, b in zip(want, recs):
            assert a.ids == b.ids and a.generator_state == b.generator_state, a.epoch
            assert_close(json.loads(a.to_json()), json.loads(b.to_json()), f"epoch {a.epoch}")
        assert_close(json.loads((ref / "summary.json").read_text()), json.loads((got / "summary.json").read_text()))
        fa, fb = (p.read_text().splitlines() for p in (ref / "samples.fasta", got / "samples.fasta"))
        assert fa[1::2] == fb[1::2] and len(fa) == len(fb)  # the kept states, in order
        assert not (got / "run.jsonl.lock").exists()
        return {"units": len(want)}

    return Case(
        "sample folder",
        lambda out: [
            "sample",
            "--model",
            model,
            *(x for s in seqs for x in ("--seq", s)),
            "--out",
            out,
            "--chains",
            "4",
            "--epochs",
            "18",
            "--burn-in",
            "2",
            "--seed",
            "7",
            "--device",
            "cpu",
            "--no-progress",
            "--no-plot",
        ],
        lambda out: _lines(out / "run.jsonl", header=1),
        lambda out: tear_last_line(out / "run.jsonl", header=1),
        check,
        seen=4,
        out_name="run",
    )


def infill_case(model: Path, data: Path) -> Case:
    rng = random.Random(3)
    recs = []
    for i in range(40):
        words = [rng.choice(AA) for _ in range(rng.randint(8, 14))]
        at = rng.randrange(2, len(words) - 2)
        words[at:at] = ["_"] * rng.randint(2, 3)
        recs.append(f">g{i}\n{' '.join(words)}\n")
    inp = data / "gapped.fasta"
    inp.write_text("".join(recs))
    return Case(
        "infill --input",
        lambda out: [
            "infill",
            "--input",
            inp,
            "--model",
            model,
            "--out",
            out,
            "-k",
            "3",
            "--method",
            "hcb",
            "--device",
            "cpu",
            "--no-progress",
        ],
        lambda out: _lines(out),
        tear_last_line,
        check_rows,
        resume=("--resume",),
        seen=5,
        out_name="fills.jsonl",
    )


def joints_case(model: Path, data: Path) -> Case:
    inp = _fasta(data / "joints.fasta", 8, 5, 10, 4)

    def check(ref: Path, got: Path, stdout: str) -> dict:
        info = check_rows(ref / "pairs.jsonl", got / "pairs.jsonl")
        assert_close(json.loads((ref / "summary.json").read_text()), json.loads((got / "summary.json").read_text()))
        return info

    return Case(
        "joints",
        lambda out: [
            "joints",
            "--model",
            model,
            "--data",
            inp,
            "--out",
            out,
            "--n-pairs",
            "20",
            "--top-k",
            "4",
            "--ag-steps",
            "10",
            "--device",
            "cpu",
            "--no-progress",
        ],
        lambda out: _lines(out / "pairs.jsonl"),
        lambda out: tear_last_line(out / "pairs.jsonl"),
        check,
        seen=6,
    )


TRAIN_EVERY = 4


def _checkpoints(out: Path) -> list[int]:
    from mlmprob.training.checkpoint import list_checkpoints

    return [int(p.name.split("-")[1]) for p in list_checkpoints(out)]


def train_case(model: Path, data: Path) -> Case:
    def tear(out: Path) -> str:
        """A checkpoint folder cut in the middle of its writing: a temporary name, half its weights."""
        steps = _checkpoints(out)
        last = out / "checkpoints" / f"step-{steps[-1]:08d}"
        tmp = out / "checkpoints" / f".tmp-step-{steps[-1] + TRAIN_EVERY:08d}"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(last, tmp)
        w = tmp / "model.safetensors"
        w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
        (tmp / "trainer_state.json").unlink()
        return f"half-written checkpoint folder after step {steps[-1]}"

    def check(ref: Path, got: Path, stdout: str) -> dict:
        import torch
        from safetensors.torch import load_file

        a, b = (json.loads((p / "trainer_state.json").read_text()) for p in (ref, got))
        assert a["done"] and b["done"] and a["step"] == b["step"]
        assert a["train_losses"] == b["train_losses"], "the loss curve differs"  # exactly
        assert [{k: v for k, v in h.items() if k != "elapsed_s"} for h in a["history"]] == [
            {k: v for k, v in h.items() if k != "elapsed_s"} for h in b["history"]
        ]
        wa, wb = load_file(ref / "model.safetensors"), load_file(got / "model.safetensors")
        assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
        summary = json.loads(stdout.strip().splitlines()[-1])
        assert summary["resumed_from"] == resumed_from[0], (summary, resumed_from)
        assert not (got / "train.lock").exists()
        return {"units": a["step"] // TRAIN_EVERY, "steps": a["step"], "resumed_from": summary["resumed_from"]}

    resumed_from = [None]  # the last complete checkpoint when units() was last called: just after the kill

    def units(out: Path) -> int:
        """Complete checkpoints (a kept one's step / TRAIN_EVERY: older ones are deleted as the run goes)."""
        steps = _checkpoints(out)
        resumed_from[0] = steps[-1] if steps else None
        return len(steps) and steps[-1] // TRAIN_EVERY

    return Case(
        "train",
        lambda out: [
            "train",
            "--out",
            out,
            "--synthetic",
            "potts",
            "--vocab-size",
            "4",
            "--length",
            "6",
            "--n-train",
            "128",
            "--n-heldout",
            "16",
            "--hidden",
            "16",
            "--layers",
            "1",
            "--heads",
            "2",
            "--intermediate",
            "32",
            "--batch-size",
            "16",
            "--steps",
            "48",
            "--warmup",
            "3",
            "--lr",
            "5e-3",
            "--dropout",
            "0.1",
            "--eval-every",
            "8",
            "--checkpoint-every",
            str(TRAIN_EVERY),
            "--kl-sequences",
            "8",
            "--seed",
            "3",
            "--no-progress",
        ],
        units,
        tear,
        check,
        seen=3,
    )


CASES = {
    "sample-stream": sample_stream_case,
    "sample-folder": sample_folder_case,
    "infill": infill_case,
    "joints": joints_case,
    "train": train_case,
}


@pytest.mark.parametrize("seed", ROUNDS)
@pytest.mark.parametrize("name", list(CASES))
def test_sigkill_then_resume(name, seed, tiny_bert_dir, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    case = CASES[name](tiny_bert_dir, data)
    record = crash_and_resume(case, tmp_path, seed)
    assert case.seen <= record["units_at_kill"] < record["units"]  # the kill fell in the middle of the run


# -- every other runner, killed in a forked child ------------------------------------------------------------
# The same scenario without a Python start-up per run: the run is forked from this process (torch and the
# tiny model already loaded), frozen once it committed a few units, refused to a second writer (here, in
# this process), continued for a seeded delay within the window its units took, SIGKILLed, torn, resumed
# in this process and compared with an uninterrupted run.


class _Child:
    """A forked child running ``fn()``, seen through the part of ``subprocess.Popen`` the watcher uses."""

    def __init__(self, fn: Callable[[], object]):
        self.returncode = None
        self.pid = os.fork()
        if self.pid == 0:  # the child: run, and never return into pytest
            code = 1
            try:
                devnull = open(os.devnull, "w")
                sys.stdout = sys.stderr = devnull
                fn()
                code = 0
            finally:
                os._exit(code)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float = 60) -> int:
        t0 = time.monotonic()
        while self.poll() is None:
            assert time.monotonic() - t0 < timeout, "the child did not end"
            time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


@dataclass
class RunnerCase:
    """``run(out)`` does the whole run into ``out`` in this process; ``second(out)`` starts it while
    another process holds the output and returns the error text; ``units``, ``tear`` and ``check`` as
    for :class:`Case`; ``files(out)`` names the log that ``units`` counts."""

    name: str
    run: Callable[[Path], object]
    second: Callable[[Path], str]
    units: Callable[[Path], int]
    tear: Callable[[Path], str]
    check: Callable[[Path, Path], dict]
    seen: int = 2
    out_name: str = "out"


IGNORED.update({"cpu_seconds", "seconds_per_chain", "wall_s"})


def kill_runner_and_resume(case: RunnerCase, tmp_path: Path, seed: int) -> dict:
    record = {"case": case.name, "seed": seed}
    ref, out = tmp_path / "ref" / case.out_name, tmp_path / "crash" / case.out_name
    ref.parent.mkdir(parents=True)
    out.parent.mkdir(parents=True)
    t = time.monotonic()
    case.run(ref)  # the uninterrupted run
    record["reference_s"] = round(time.monotonic() - t, 2)
    child = _Child(lambda: case.run(out))
    try:
        watcher = _Watcher(child, lambda: case.units(out), case.seen)
        watcher.run()
        assert watcher.nth is not None, watcher.problem
        err = case.second(out)  # a second writer while the first (frozen) holds it
        assert "being written by another process" in err and f"(pid {child.pid} on " in err, err
        # the kill, while the run is still frozen where the watcher stopped it: no sleep races the run
        assert child.poll() is None, "the run ended before the watcher froze it: make it longer"
        child.kill()
        assert child.wait() == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGCONT)
            child.kill()
            child.wait()
    record["units_at_kill"] = case.units(out)
    record["torn"] = case.tear(out)
    case.run(out)  # resumed
    record.update(case.check(ref, out))
    if os.environ.get("MLMPROB_CRASH_LOG"):
        with open(os.environ["MLMPROB_CRASH_LOG"], "a") as f:
            f.write(json.dumps(record) + "\n")
    return record


def _locked_error(fn: Callable[[], object]) -> str:
    from mlmprob.runtime.lock import OutputLocked

    with pytest.raises(OutputLocked) as e:
        fn()
    return str(e.value)


def _cli_error(argv: list) -> str:
    rc, _, err = _in_process(argv)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    return err


def _same_records(key: Callable[[dict], object]) -> Callable[[Path, Path], dict]:
    """Every record of the uninterrupted log exactly once (by ``key``) in the resumed one, equal."""
    from mlmprob.runtime.log import read_log

    def check(ref: Path, got: Path) -> dict:
        want, rows = list(read_log(ref)), list(read_log(got))
        keys = [key(r) for r in rows]
        assert len(keys) == len(set(keys)), "a unit was written twice"
        assert sorted(map(repr, keys)) == sorted(repr(key(r)) for r in want), "units missing or extra"
        by = {key(r): r for r in rows}
        for r in want:
            assert_close(r, by[key(r)], repr(key(r)))
        assert not got.with_name(got.name + ".lock").exists()
        return {"units": len(want)}

    return check


def _cli_runner(name: str, argv: Callable[[Path], list], seen: int) -> RunnerCase:
    def run(out: Path) -> None:
        rc, _, err = _in_process(argv(out) + (["--resume"] if out.exists() else []))
        assert rc == 0, err

    return RunnerCase(
        name,
        run,
        lambda out: _cli_error(argv(out) + ["--resume"]),
        lambda out: _lines(out),
        tear_last_line,
        lambda ref, got: check_rows(ref, got),
        seen=seen,
        out_name="out.jsonl",
    )


def score_case(model: Path, data: Path) -> RunnerCase:
    inp = _fasta(data / "score.fasta", 60, 6, 14, 6)
    return _cli_runner(
        "score",
        lambda out: [
            "score",
            inp,
            "--model",
            model,
            "--out",
            out,
            "--batch-tokens",
            "16",
            "--device",
            "cpu",
            "--no-progress",
        ],
        seen=4,
    )


def variants_case(model: Path, data: Path) -> RunnerCase:
    wt = "MKTAYIAKQRQISF"
    rng = random.Random(7)
    muts = sorted(
        {
            ":".join(
                sorted(
                    {
                        f"{wt[i]}{i + 1}{rng.choice([a for a in AA if a != wt[i]])}"
                        for i in rng.sample(range(len(wt)), rng.randint(1, 3))
                    },
                    key=lambda m: int(m[1:-1]),
                )
            )
            for _ in range(900)
        }
    )
    (data / "dms.csv").write_text("mutant\n" + "".join(m + "\n" for m in muts))
    return _cli_runner(
        "variants",
        lambda out: [
            "variants",
            data / "dms.csv",
            "--wild-type",
            wt,
            "--model",
            model,
            "--out",
            out,
            "--device",
            "cpu",
            "--no-progress",
        ],
        seen=256,
    )  # the command commits chunks of 256 rows


def cdr_h3_case(model: Path, data: Path) -> RunnerCase:
    from experiments import cdr_h3

    hcs = {
        "tras": "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYY"
        "CSRWGGDGFYAMDYWGQGTLVTVSS",
        "pert": "EVQLVESGGGLVQPGGSLRLSCAASGFTFTDYTMDWVRQAPGKGLEWVADVNPNSGGSIYNQRFKGRFTLSVDRSKNTLYLQMNSLRAEDTAVYY"
        "CARNLGPSFYFDYWGQGTLVTVSS",
    }
    (data / "abs.csv").write_text("Therapeutic,HC\n" + "".join(f"{k},{v}\n" for k, v in hcs.items()))

    def argv(out: Path) -> list[str]:
        return [
            "--model",
            str(model),
            "--out",
            str(out),
            "--data",
            str(data / "abs.csv"),
            "--tables",
            "1",
            "--epochs",
            "1",
            "--burn-in",
            "1",
            "--n-antibodies",
            "2",
            "--chains",
            "2",
            "--no-report",
        ]

    def run(out: Path) -> None:
        assert cdr_h3.main(argv(out)) == 0

    def second(out: Path) -> str:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert cdr_h3.main(argv(out)) == 2
        return err.getvalue()

    return RunnerCase(
        "cdr_h3",
        run,
        second,
        lambda out: _lines(out / "results.jsonl"),
        lambda out: tear_last_line(out / "results.jsonl"),
        lambda ref, got: _same_records(lambda r: (r["config"], r["unit"], r["chain"]))(
            ref / "results.jsonl", got / "results.jsonl"
        ),
        seen=4,
    )


def ground_truth_case(model: Path, data: Path) -> RunnerCase:
    from experiments.ground_truth import GroundTruthConfig
    from experiments.ground_truth import run as gt_run

    cfg = GroundTruthConfig(
        vocab_size=3,
        length=4,
        couplings=(0.5, 1.0),
        n_train=200,
        n_heldout=20,
        steps=20,
        eval_every=10,
        n_pairs=3,
        n_gaps=3,
        gap_lengths=(2,),
        chains=8,
        sample_epochs=3,
    )

    def run(out: Path) -> None:
        gt_run(cfg, out, out.with_name(out.name + "-runs"), stages=("coupling",), progress=False, log=lambda *_: None)

    return RunnerCase(
        "ground_truth",
        run,
        lambda out: _locked_error(lambda: run(out)),
        lambda out: _lines(out / "results.jsonl"),
        lambda out: tear_last_line(out / "results.jsonl"),
        lambda ref, got: _same_records(lambda r: r["unit"])(ref / "results.jsonl", got / "results.jsonl"),
        seen=2,
    )


def variants_data_case(model: Path, data: Path) -> RunnerCase:
    import importlib.util

    import mlmprob.models
    from experiments import variants_data, variants_data_runner
    from experiments.variants_data_common import result_path

    spec = importlib.util.spec_from_file_location(  # by path: tests/experiments need not be on sys.path
        "_variants_data_tests", Path(__file__).resolve().parents[1] / "experiments" / "test_variants_data.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module._fake_data(data)
    tiny = mlmprob.models.load_mlm(str(model))

    def argv(out: Path) -> list[str]:
        return [
            "--data",
            str(data),
            "--out",
            str(out),
            "--threads",
            "1",
            "--no-report",
            "--plan",
            "sapiens-vh:masked_marginals_mt:all,sapiens-vh:hcb:all",
        ]

    def run(out: Path) -> None:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(mlmprob.models, "load_mlm", lambda name, dtype=None: tiny)
            mp.setattr(variants_data_runner, "DEFAULT_CHUNK", 1)
            assert variants_data.main(argv(out)) == 0

    def second(out: Path) -> str:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert variants_data.main(argv(out)) == 2
        return err.getvalue()

    groups = ("masked_marginals_mt", "hcb")

    def units(out: Path) -> int:
        return sum(_lines(result_path(out, "sapiens-vh", g)) for g in groups)

    def tear(out: Path) -> str:
        paths = [result_path(out, "sapiens-vh", g) for g in groups]
        return tear_last_line(max((p for p in paths if p.exists()), key=lambda p: p.stat().st_mtime_ns))

    def check(ref: Path, got: Path) -> dict:
        n = 0
        for g in groups:
            n += _same_records(lambda c: c["start"])(
                result_path(ref, "sapiens-vh", g), result_path(got, "sapiens-vh", g)
            )["units"]
        return {"units": n}

    return RunnerCase("variants_data", run, second, units, tear, check, seen=3)


def _gapped_antibodies(data: Path) -> None:
    rng = random.Random(8)
    rows = ["antibody_id,vh_protein_sequence,heavy_aligned_aho"]
    for i in range(4):
        seq = "".join(rng.choice(AA) for _ in range(12))
        rows.append(f"ab{i},{seq},{seq[:4] + '-' * 102 + seq[4:] + '-' * 40}")
    (data / "antibody").mkdir(exist_ok=True)
    (data / "antibody" / "GDPa1_v1.2.csv").write_text("\n".join(rows) + "\n")


def infill_runner_case(model: Path, data: Path) -> RunnerCase:
    from experiments.infill_runner import ExperimentConfig, record_key, run_experiment
    from mlmprob.models import load_mlm

    _gapped_antibodies(data)
    tiny = load_mlm(str(model))
    # not "ablation-scramble": its context scrambler is one generator for the whole run, so a resumed run
    # draws other scrambles for the records after the kill than an uninterrupted one
    cfg = ExperimentConfig(
        models=("tiny",),
        regions=("random",),
        lengths=(2, 3),
        n_gaps=4,
        beam_size=3,
        methods=("hcb-l2r", "standard-best", "pure-sampling"),
    )

    def run(out: Path) -> None:
        run_experiment(cfg, out, data_dir=data, load=lambda name: tiny, progress=False)

    return RunnerCase(
        "infill runner",
        run,
        lambda out: _locked_error(lambda: run(out)),
        lambda out: _lines(out),
        tear_last_line,
        _same_records(record_key),
        seen=4,
    )


def pivots_case(model: Path, data: Path) -> RunnerCase:
    from experiments.infill_pivots import PivotSweepConfig, _key, run_sweep
    from mlmprob.models import load_mlm

    _gapped_antibodies(data)
    tiny = load_mlm(str(model))
    cfg = PivotSweepConfig(model="tiny", region="random", k=2, n_gaps=4, beam_size=3, pivots=(tiny.mask_id, 5, 6, 7))

    def run(out: Path) -> None:
        run_sweep(cfg, out, data_dir=data, load=lambda name: tiny, progress=False)

    return RunnerCase(
        "pivots",
        run,
        lambda out: _locked_error(lambda: run(out)),
        lambda out: _lines(out),
        tear_last_line,
        _same_records(_key),
        seen=4,
    )


RUNNERS = {
    "score": score_case,
    "variants": variants_case,
    "cdr_h3": cdr_h3_case,
    "ground_truth": ground_truth_case,
    "variants_data": variants_data_case,
    "infill-runner": infill_runner_case,
    "pivots": pivots_case,
}


@pytest.mark.parametrize("seed", ROUNDS)
@pytest.mark.parametrize("name", list(RUNNERS))
def test_sigkill_a_runner_then_resume(name, seed, tiny_bert_dir, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    case = RUNNERS[name](tiny_bert_dir, data)
    record = kill_runner_and_resume(case, tmp_path, seed)
    assert case.seen <= record["units_at_kill"] < record["units"]  # the kill fell in the middle of the run
