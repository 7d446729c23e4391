"""The streamed runtime on the device, through the command line (issue 40): ``mlmprob score`` on
``gpu_switch.DEVICE`` writes the same bytes as one run in process, as two shards merged, as a fresh process
given the device by index (``--devices cuda:0``), as two worker processes on the same device
(``--devices cuda:0,cuda:0``), and as a run killed at a committed row and resumed.
A tiny random BERT saved to a temporary folder (conftest's ``save_tiny_bert``), never a downloaded model.

The reference run and the shards run in this process through ``mlmprob.cli.main`` (the code ``python -m mlmprob``
runs, without a Python start-up each); the worker runs and the killed run are ``python -m mlmprob`` processes.
"""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from gpu_switch import (
    DEVICE,
    MARKS,
    host_threads,  # noqa: F401 - the fixture MARKS uses
    worker_devices,
)
from held import Held

from mlmprob.cli import main

pytestmark = MARKS
N_RECORDS = 40  # three work units of 16 records


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    rng = random.Random(7)
    path = tmp_path_factory.mktemp("gpu-runtime") / "in.fasta"
    seqs = ["".join(rng.choice("ACDEFGHIKLMNPQRSTVWY") for _ in range(rng.randint(3, 60))) for _ in range(N_RECORDS)]
    path.write_text("".join(f">r{i}\n{s}\n" for i, s in enumerate(seqs)))
    return path


def _argv(inputs, model, out):
    return ["score", str(inputs), "--model", str(model), "--dtype", "float32", "--out", str(out), "--no-progress"]


def _on_device(inputs, model, out):
    return [*_argv(inputs, model, out), "--device", DEVICE]


@pytest.fixture(scope="module")
def reference(inputs, tiny_bert_dir, tmp_path_factory):
    """The whole run in this process on the device: its output's bytes."""
    out = tmp_path_factory.mktemp("gpu-ref") / "whole.jsonl"
    assert main(_on_device(inputs, tiny_bert_dir, out)) == 0
    data = out.read_bytes()
    assert data.count(b"\n") == N_RECORDS
    return data


def _cli(argv) -> tuple[list[str], dict]:
    """``python -m mlmprob ARGV`` and its environment: this checkout's ``src`` first on ``PYTHONPATH``, then the
    test process's own ``PYTHONPATH``."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env["PYTHONPATH"]]) if env.get("PYTHONPATH") else src
    return [sys.executable, "-m", "mlmprob", *map(str, argv)], env


def _run(argv) -> str:
    cmd, env = _cli(argv)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_two_shards_merged_equal_the_whole_run(inputs, tiny_bert_dir, reference, tmp_path):
    parts = [tmp_path / f"part{i}.jsonl" for i in (1, 2)]
    for i, part in enumerate(parts, 1):
        assert main([*_on_device(inputs, tiny_bert_dir, part), "--shard", f"{i}/2"]) == 0
    assert 0 < parts[0].read_bytes().count(b"\n") < N_RECORDS  # each shard wrote a part of the records
    merged = tmp_path / "merged.jsonl"
    assert main(["merge", "--out", str(merged), *map(str, parts)]) == 0
    assert merged.read_bytes() == reference


@pytest.mark.parametrize("workers", [1, 2])
def test_worker_processes_on_the_device_equal_the_in_process_run(inputs, tiny_bert_dir, reference, tmp_path, workers):
    """``--devices cuda:0`` (one device: the command loads the model in its own process, named by index) and
    ``--devices cuda:0,cuda:0`` (two spawned worker processes on the same GPU, the work units dealt between them);
    ``cpu`` and ``cpu,cpu`` in the dry run. (``--workers 2`` with ``--devices`` is refused: ``--devices`` starts one
    worker per entry, ``--workers N`` is N CPU workers.)"""
    out = tmp_path / f"w{workers}.jsonl"
    err = _run([*_argv(inputs, tiny_bert_dir, out), "--devices", worker_devices(workers)])
    assert "capped" not in err and (workers == 1 or f" on {workers} x " in err), err  # both workers ran
    assert out.read_bytes() == reference


def test_a_run_killed_at_a_committed_row_resumes_to_the_whole_run(inputs, tiny_bert_dir, reference, tmp_path):
    out = tmp_path / "held.jsonl"
    cmd, env = _cli(_on_device(inputs, tiny_bert_dir, out))
    held = Held(rows=10)
    proc = held.popen(cmd, env, stderr=subprocess.PIPE, text=True)
    try:
        committed = held.wait(what=lambda: proc.stderr.read())
        assert 10 <= committed < N_RECORDS
        held.kill()
    finally:
        held.stop()
    assert 10 <= out.read_bytes().count(b"\n") < N_RECORDS  # the killed run's rows, no more
    assert main([*_on_device(inputs, tiny_bert_dir, out), "--resume"]) == 0
    assert out.read_bytes() == reference
