"""Half precision on a CPU records what changes its bits (issue 49, item 1): oneDNN's bfloat16/float16 kernels
split their sums by the thread count and the sub-batch's shape on some CPUs (0.10 nats between ``--threads 1``
and ``2`` on an Intel Xeon), which the float32 thread-invariant products (runtime.threads) do not cover. So a
bfloat16 run stores ``computed_with.threads`` (per computing process: ``--workers N`` runs ``cores // N`` each)
and ``computed_with.batch_tokens``, and a resume or a merge that would mix them is refused naming the key;
float32 stores its budget (it moves the last bits: 2.8e-5 nats measured) but no thread count (its bits do not
depend on it) and mixes thread counts freely."""

import json
from types import SimpleNamespace

import pytest
import torch
from test_merge_trust import _error, _merge, _score, fasta  # noqa: F401 (fixture)

from mlmprob.cli import main
from mlmprob.runtime.provenance import compute_threads, computed_with
from mlmprob.runtime.writers import meta_path


@pytest.fixture(autouse=True)
def _keep_threads():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def _run(model, inp, out, threads, *extra):
    return main(["--threads", str(threads), "score", str(inp), "--model", str(model), "--out", str(out),
                 "--no-progress", "--device", "cpu", *map(str, extra)])  # fmt: skip


def _block(path):
    return json.loads(meta_path(path).read_text())["config"]["computed_with"]


def test_bfloat16_parts_of_other_thread_counts_are_not_merged(tiny_bert_dir, fasta, tmp_path, capsys):  # noqa: F811
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert _run(tiny_bert_dir, fasta, a, 1, "--shard", "1/2", "--dtype", "bfloat16") == 0
    assert _run(tiny_bert_dir, fasta, b, 2, "--shard", "2/2", "--dtype", "bfloat16") == 0
    assert (_block(a)["threads"], _block(b)["threads"], _block(a)["batch_tokens"]) == (1, 2, 4096)
    capsys.readouterr()
    assert _merge(tmp_path / "m.jsonl", [a, b]) == 2
    assert (
        _error(capsys)
        == f"error: parts come from different runs: {a} has computed_with.threads=1, {b} has computed_with.threads=2"
    )
    c = tmp_path / "c.jsonl"
    assert _run(tiny_bert_dir, fasta, c, 1, "--shard", "2/2", "--dtype", "bfloat16") == 0
    assert _merge(tmp_path / "m.jsonl", [a, c]) == 0  # the same thread count: merged


def test_bfloat16_resume_across_threads_or_budgets_is_refused(tiny_bert_dir, fasta, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "o.jsonl"
    assert _run(tiny_bert_dir, fasta, out, 1, "--dtype", "bfloat16", "--limit", "5") == 0
    capsys.readouterr()
    assert _run(tiny_bert_dir, fasta, out, 2, "--dtype", "bfloat16", "--resume") == 2
    assert "computed_with.threads=1; this run has computed_with.threads=2" in _error(capsys)
    assert _run(tiny_bert_dir, fasta, out, 1, "--dtype", "bfloat16", "--resume", "--batch-tokens", "64") == 2
    assert "computed_with.batch_tokens=4096; this run has computed_with.batch_tokens=64" in _error(capsys)
    assert _run(tiny_bert_dir, fasta, out, 1, "--dtype", "bfloat16", "--resume") == 0
    assert len(out.read_text().splitlines()) == 24


def test_float32_records_its_budget_not_its_thread_count(tiny_bert_dir, fasta, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "o.jsonl"
    assert _run(tiny_bert_dir, fasta, out, 1, "--limit", "5") == 0
    assert "threads" not in _block(out) and _block(out)["batch_tokens"] == 4096
    capsys.readouterr()
    assert _run(tiny_bert_dir, fasta, out, 1, "--resume", "--batch-tokens", "64") == 2  # moves the last bits
    assert "computed_with.batch_tokens=4096; this run has computed_with.batch_tokens=64" in _error(capsys)
    assert _run(tiny_bert_dir, fasta, out, 2, "--resume") == 0  # another thread count: the same bits


def test_the_threads_recorded_for_workers_and_ray(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert compute_threads(["cpu"] * 2) == 8 and compute_threads(["cpu"] * 3) == 5
    assert compute_threads(["cpu"] * 32) == 1 and compute_threads(["cpu"] * 4, "ray") == 1
    block = computed_with("m", "bfloat16", ["cpu", "cpu"])
    assert (block["threads"], block["batch_tokens"]) == (8, 4096)
    assert "threads" not in computed_with("m", "float32", ["cpu", "cpu"])
    on_gpu = SimpleNamespace(device="cuda:0", dtype=torch.float32, fused=True)  # a loaded model on a GPU
    assert "batch_tokens" not in computed_with("m", None, ["cpu"], mlm=on_gpu)  # its default follows its memory
    assert computed_with("m", None, ["cpu"], mlm=on_gpu, batch_tokens=512)["batch_tokens"] == 512


def test_an_output_written_before_the_budget_was_stored_resumes_as_before(tiny_bert_dir, fasta, tmp_path):  # noqa: F811
    out = tmp_path / "o.jsonl"
    assert _run(tiny_bert_dir, fasta, out, 1, "--limit", "5") == 0
    meta = json.loads(meta_path(out).read_text())
    del meta["config"]["computed_with"]["batch_tokens"]  # as the version before issue 49 wrote it
    meta_path(out).write_text(json.dumps(meta))
    assert _run(tiny_bert_dir, fasta, out, 1, "--resume") == 0
    assert len(out.read_text().splitlines()) == 24 and "batch_tokens" not in _block(out)  # it gains no claim
