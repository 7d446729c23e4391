"""Issue 35's cases of standard input: it is read once per command, its spooled copies do not outlive a killed
run, ``MLMPROB_HOLD`` is checked, and the messages name the real cause (``stdin`` group; see ``attack.py``).

The function yields its cases one by one (a case's set-up runs just before it): :class:`Case` objects, judged
by ``attack_harness.run_case``, or finished records (dicts)."""

from __future__ import annotations

import resource
import time
from pathlib import Path

from attack_harness import NEVER_CLOSED, Case, fasta, jsonl_rows, lost_rows, model_args, run_subprocess, setup
from attack_limits import MEMORY
from attack_runs import Hold


def stdin_cases(d: Path, model: Path):
    """Standard input read once per command, its spooled copies, MLMPROB_HOLD, and the messages."""
    d.mkdir(parents=True, exist_ok=True)
    m = model_args(model)
    good = fasta(d / "good.fasta", 6, seed=7)
    shards = [d / f"from-stdin{i}.jsonl" for i in (1, 2)]
    for i, p in enumerate(shards, 1):
        setup(d, ["score", "-", *m, "--out", p, "--shard", f"{i}/2"], stdin=good.read_bytes())
    merged = d / "merged-stdin.jsonl"
    yield Case(
        "merge of shards made from stdin (merge's own stdin never closed)",
        ["merge", "--out", merged, *shards],
        expect="ok",
        stdin=NEVER_CLOSED,
        timeout=120,
        lost=lost_rows(merged, 6),
        group="stdin",
    )
    yield Case(
        "joints --data - (reads stdin once)",
        _joints_argv(d, m),
        expect="ok",
        stdin=good.read_bytes(),
        timeout=300,
        group="stdin",
    )
    yield _spool_kill(d, m, good)
    out = d / "hold-malformed.jsonl"
    yield Case(
        "MLMPROB_HOLD malformed (refused at start, before any row)",
        ["score", good, *m, "--out", out],
        env={"MLMPROB_HOLD": "1:x"},
        says=("MLMPROB_HOLD",),
        guard=(out,),
        group="stdin",
    )
    # the input is standard input, never closed; the run is held at row 1 by a controller that lets go at once:
    # it must stop with one line naming the input that never ended, not wait for ever
    yield Case(
        "MLMPROB_HOLD held with a never-closed stdin (no hang)",
        ["score", "-", *m, "--out", d / "hold-stdin.jsonl"],
        hold=1,
        says=("standard input",),
        stdin=NEVER_CLOSED,
        timeout=120,
        group="stdin",
    )
    yield from _file_cases(d, m, good)


def _file_cases(d: Path, m: list, good: Path):
    """Standard input given as a file name: ``/dev/stdin`` (a pipe, then a file) and ``/dev/zero``."""
    text = "".join(f"the {w} sat on the mat number {i}\n" for i, w in enumerate(["cat", "dog", "bird", "fox"] * 10))
    yield Case(
        "train --text /dev/stdin",
        _train_argv(d),
        expect="any",
        says=("/dev/stdin|standard input",),
        never=("not found",),
        stdin=text.encode(),
        timeout=300,
        group="stdin",
    )
    ids = [f"s{i}" for i in range(6)]
    yield Case(
        "score /dev/stdin < x.fasta (format from the content)",
        ["score", "/dev/stdin", *m],
        expect="ok",
        stdin=good.read_bytes(),
        stdin_file=True,
        timeout=300,
        group="stdin",
        check=lambda out, err: (
            None
            if [r.get("id") for r in jsonl_rows(out)] == ids
            else f"ids {[r.get('id') for r in jsonl_rows(out)][:3]}..., expected {ids[:3]}..."
        ),
    )
    full = d / "full-temp"
    full.mkdir()
    yield Case(
        "/dev/zero with a full temp folder (RLIMIT_FSIZE 4 MiB)",
        ["score", "/dev/zero", *m],
        env={"TMPDIR": str(full)},
        limits={resource.RLIMIT_FSIZE: 4 << 20, **MEMORY},
        timeout=120,
        says=(f"temp|{full}",),
        group="stdin",
    )


def _joints_argv(d: Path, m: list) -> list:
    """One pair of a joints run reading its data from standard input (``--data -``)."""
    return [
        "joints",
        "--data",
        "-",
        "--format",
        "fasta",
        "--out",
        d / "jd",
        "--n-pairs",
        "1",
        "--ag-steps",
        "5",
        "--top-k",
        "4",
        *m[:2],
        "--device",
        "cpu",
        "--quiet",
    ]


def _train_argv(d: Path) -> list:
    """A two-step training run on text read from ``/dev/stdin``."""
    return [
        "train",
        "--text",
        "/dev/stdin",
        "--out",
        d / "tr-stdin",
        "--steps",
        "2",
        "--hidden",
        "16",
        "--layers",
        "1",
        "--intermediate",
        "32",
        "--tokenizer-vocab-size",
        "60",
        "--batch-size",
        "4",
        "--warmup",
        "0",
        "--eval-every",
        "2",
        "--checkpoint-every",
        "2",
        "--kl-sequences",
        "0",
        "--no-progress",
    ]


def _spool_kill(d: Path, m: list, good: Path) -> dict:
    """A run reading stdin killed at a held row (TMPDIR a fresh folder), then another run reading stdin:
    no ``mlmprob-stdin-*`` copy may be left in the folder."""
    tmp = d / "spool-temp"
    tmp.mkdir()
    t = time.monotonic()
    hold = Hold(1)
    with open(good, "rb") as given:
        hold.start(["score", "-", *m, "--out", d / "spool-kill.jsonl"], env={"TMPDIR": str(tmp)}, stdin=given)
    with hold:
        held = hold.wait()
        hold.kill()
    after_kill = len(list(tmp.glob("mlmprob-stdin-*")))
    code, _, err = run_subprocess(["score", "-", *m], good.read_bytes(), d, env={"TMPDIR": str(tmp)}, timeout=300)
    left = len(list(tmp.glob("mlmprob-stdin-*")))
    outcome = (
        "not held"
        if not held
        else f"next run failed (status {code})"
        if code != 0
        else f"{left} spooled cop{'y' if left == 1 else 'ies'} left"
        if left
        else "ok"
    )
    return {
        "group": "processes",
        "case": "SIGKILL of a run reading stdin, then another: spooled copies",
        "held": held,
        "after_kill": after_kill,
        "left": left,
        "status": code,
        "outcome": outcome,
        "stderr": err.strip()[-300:] if code != 0 else "",
        "s": round(time.monotonic() - t, 2),
    }
