"""``--engine ray`` on a local 2-CPU Ray instance: the same rows as a one-process run, in input order, each id
once, also when an actor is killed mid-run (Ray replaces it and reruns its chunks). Skipped without Ray."""

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass

import pytest

pytest.importorskip("ray.data", reason="Ray is not installed (pip install 'mlmprob[ray]')")

from mlmprob.cli import main  # noqa: E402
from mlmprob.errors import MLMProbError  # noqa: E402
from mlmprob.models.spec import ModelSpec
from mlmprob.runtime.engine import run_stream  # noqa: E402
from mlmprob.runtime.inputs import read_records  # noqa: E402
from mlmprob.runtime.writers import open_writer, read_results  # noqa: E402
from mlmprob.scoring import ScoreJob  # noqa: E402

AA = "ACDEFGHIKLMNPQRSTVWY"
N = 60


@pytest.fixture(scope="module")
def reference(tiny_bert_dir, tmp_path_factory):
    """A FASTA of N records and its one-process scores, in input order."""
    d = tmp_path_factory.mktemp("ray")
    rng = random.Random(1)
    inp = d / "in.fasta"
    inp.write_text("".join(f">s{i}\n{' '.join(rng.choice(AA) for _ in range(rng.randint(8, 40)))}\n" for i in range(N)))
    assert (
        main(
            [
                "score",
                str(inp),
                "--model",
                str(tiny_bert_dir),
                "--out",
                str(d / "one.jsonl"),
                "--no-progress",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    rows = list(read_results(d / "one.jsonl"))
    assert len(rows) == N
    return inp, {r["id"]: float(r["pll"]) for r in rows}


def _same(rows, ref):
    ids = [r["id"] for r in rows]
    assert ids == list(ref)  # every id once, in input order
    assert max(abs(float(r["pll"]) - ref[r["id"]]) for r in rows) <= 1e-5


def test_cli_engine_ray_equals_one_process_and_stays_quiet(reference, tiny_bert_dir):
    """The real command: it starts (and stops) its own local Ray instance; stdout is only the JSONL rows,
    stderr only the summary line."""
    inp, ref = reference
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("RAY_ADDRESS", None)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "mlmprob",
            "score",
            str(inp),
            "--model",
            str(tiny_bert_dir),
            "--engine",
            "ray",
            "--workers",
            "2",
            "--no-progress",
            "--dtype",
            "float32",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == [f"scored {N} sequences with {tiny_bert_dir} on Ray actors float32"], p.stderr
    _same([json.loads(line) for line in p.stdout.splitlines()], ref)


@pytest.fixture(scope="module")
def local_ray():
    """One 2-CPU local Ray instance for the in-process tests (map_ray uses it and leaves it running)."""
    import logging

    import ray

    ray.init(num_cpus=2, log_to_driver=False, include_dashboard=False, logging_level=logging.ERROR)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers cannot import this test file
    yield ray
    ray.shutdown()


@dataclass(frozen=True)
class KillOnce:
    """ScoreJob whose actor process exits (os._exit, as a crash or a lost node would) on its ``at``-th chunk,
    once per run: ``marker`` is created atomically by the process that dies and holds its pid."""

    job: ScoreJob
    marker: str
    at: int

    def load(self, device):
        return {"mlm": self.job.load(device), "chunks": 0}

    def run(self, state, chunk):
        state["chunks"] += 1
        if state["chunks"] == self.at:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os._exit(1)
        return self.job.run(state["mlm"], chunk)


def test_killed_actor_is_replaced_and_every_id_written_once(local_ray, reference, tiny_bert_dir, tmp_path, capsys):
    inp, ref = reference
    job = KillOnce(ScoreJob(model_spec=ModelSpec(str(tiny_bert_dir), "float32")), str(tmp_path / "killed"), at=3)
    out = tmp_path / "out.parquet"
    writer = open_writer(out, config={"test": "ray-kill"}, part_rows=16)
    with writer:  # 15 chunks of 4 over 2 actors: one actor dies on its 3rd chunk, with chunks still to come
        summary = run_stream(
            job.load,
            job.run,
            read_records(inp),
            writer,
            devices=["cpu", "cpu"],
            engine="ray",
            chunk_size=4,
            progress=False,
        )
    pid = int((tmp_path / "killed").read_text())
    assert pid != os.getpid()  # the kill happened in an actor process, not here
    assert summary.written == N and not summary.skipped
    _same(list(read_results(out)), ref)
    assert capsys.readouterr().out == ""  # Ray's "worker died ... will be retried" echo is dropped
    assert local_ray.is_initialized()  # an instance map_ray did not start is left running


def test_model_that_fails_to_load_is_one_clean_error(local_ray, reference, tmp_path):
    inp, _ = reference
    job = ScoreJob(model_spec=ModelSpec(str(tmp_path / "no-such-model")))
    with open_writer(tmp_path / "bad.jsonl", config={"test": "ray-bad"}) as writer:
        with pytest.raises(MLMProbError) as e:
            run_stream(job.load, job.run, read_records(inp), writer, devices=["cpu"], engine="ray", progress=False)
    assert "no-such-model" in str(e.value) and "\n" not in str(e.value)


def _load_tag(device):
    return f"loaded on {device}"


def _run_times_ten(state, chunk):
    return [x * 10 for x in chunk], state


def test_windows_of_chunks_come_back_in_order(local_ray):
    """The stream is cut into Ray datasets of ``window`` chunks (fresh actors each): order holds across them."""
    from mlmprob.runtime.ray_engine import map_ray

    chunks = [[i, i + 1] for i in range(0, 6, 2)]  # two windows: [c0, c1], [c2]
    out = list(map_ray(_load_tag, _run_times_ten, iter(chunks), ["cpu"], window=2))
    assert out == [([x * 10 for x in c], "loaded on cpu") for c in chunks]
