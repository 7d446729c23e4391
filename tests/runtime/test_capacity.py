"""``--workers`` is capped by CPU cores, memory and the work there is, with a one-line warning."""

import pytest

from mlmprob.cli import main
from mlmprob.runtime import capacity
from mlmprob.runtime.capacity import GiB, worker_bytes
from mlmprob.runtime.pool import map_ordered
from mlmprob.runtime.writers import read_results


@pytest.fixture
def fasta(tmp_path):
    path = tmp_path / "in.fasta"
    path.write_text("".join(f">s{i}\nA C D E F G H I K\n" for i in range(3)))
    return path


@pytest.mark.parametrize(
    "cores, memory, why",
    [
        (1, 64 * GiB, "(1 CPU core)"),
        (64, GiB, "(1.0 GiB of memory available, about "),
    ],
)
def test_workers_are_capped_with_a_warning(tiny_bert_dir, fasta, tmp_path, capsys, monkeypatch, cores, memory, why):
    monkeypatch.setattr(capacity, "usable_cores", lambda: cores)
    monkeypatch.setattr(capacity, "available_memory", lambda: memory)
    out = tmp_path / "o.jsonl"
    assert (
        main(
            [
                "score",
                str(fasta),
                "--model",
                str(tiny_bert_dir),
                "--out",
                str(out),
                "--workers",
                "100",
                "--no-progress",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning")]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: --workers 100 capped to 1 {why}"), warnings
    assert len(list(read_results(out))) == 3


@pytest.mark.parametrize(
    "cores, memory, why",
    [
        (1, 64 * GiB, "(1 CPU core)"),
        (64, GiB, "(1.0 GiB of memory available, about "),
    ],
)
def test_cpu_devices_are_capped_like_workers(tiny_bert_dir, fasta, tmp_path, capsys, monkeypatch, cores, memory, why):
    """``--devices cpu,cpu,cpu`` started three CPU workers whatever the cores and memory (issue 35)."""
    monkeypatch.setattr(capacity, "usable_cores", lambda: cores)
    monkeypatch.setattr(capacity, "available_memory", lambda: memory)
    out = tmp_path / "o.jsonl"
    assert (
        main(
            [
                "score",
                str(fasta),
                "--model",
                str(tiny_bert_dir),
                "--out",
                str(out),
                "--devices",
                "cpu,cpu,cpu",
                "--no-progress",
            ]
        )
        == 0
    )
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning")]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"warning: --devices cpu,cpu,cpu capped to 1 CPU worker {why}"
    ), warnings
    assert len(list(read_results(out))) == 3


def test_only_the_cpu_entries_of_devices_are_capped(monkeypatch):
    monkeypatch.setattr(capacity, "usable_cores", lambda: 2)
    monkeypatch.setattr(capacity, "available_memory", lambda: 64 * GiB)
    assert capacity.capped_devices(["cuda:0", "cpu", "cuda:1", "cpu", "cpu"]) == ["cuda:0", "cpu", "cuda:1", "cpu"]
    assert capacity.capped_devices(["cpu", "cpu"]) == ["cpu", "cpu"]


def test_a_worker_is_estimated_from_its_weight_files(tiny_bert_dir, tmp_path):
    weights = (tiny_bert_dir / "model.safetensors").stat().st_size
    assert worker_bytes(str(tiny_bert_dir)) == capacity.RUNTIME_BYTES + 2 * weights
    assert (
        worker_bytes("antiberty")
        == worker_bytes(str(tmp_path))
        == capacity.RUNTIME_BYTES + 2 * capacity.UNKNOWN_WEIGHT_BYTES
    )


def _init(device):
    return device


def _work(state, item):
    return state, item


def test_no_more_processes_than_items(capsys):
    started = []

    def init(device):
        started.append(device)
        return device

    assert list(map_ordered(init, _work, [7], ["cpu:0", "cpu:1"])) == [("cpu:0", 7)]  # one item: this process
    assert capsys.readouterr().err == "warning: 2 worker processes capped to 1 (only 1 chunk of work)\n"
    assert list(map_ordered(init, _work, [], ["cpu:0", "cpu:1"])) == [] and started == ["cpu:0"]  # none: no model
