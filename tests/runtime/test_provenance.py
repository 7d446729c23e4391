"""Results never silently mixed: a run's stored configuration says how its rows were computed
(``computed_with``: the resolved dtype, the forward, the model folder, the int8 budget), a resume or a
``merge`` that differs is refused naming the option, ``merge`` writes in input order and can be rerun
after a kill, and folder-mode ``sample`` refuses another ``--seed``."""

import json
import os
import signal
import subprocess
import sys

import pytest
from held import Held

from mlmprob.cli import main
from mlmprob.errors import MLMProbError
from mlmprob.runtime.merge import merge_parts, merging_path
from mlmprob.runtime.writers import meta_path, open_writer, read_results

AA = "ACDEFGHIKLMNPQRSTVWY"


def _fasta(path, n):
    with open(path, "w") as f:
        for i in range(n):
            f.write(f">s{i}\n{' '.join(AA[(i + j) % 20] for j in range(6 + i % 5))}\n")
    return path


def _score(model, inp, out, *extra):
    return main(
        [
            "score",
            str(inp),
            "--model",
            str(model),
            "--out",
            str(out),
            "--no-progress",
            "--device",
            "cpu",
            *map(str, extra),
        ]
    )


def _config(out):
    return json.loads(meta_path(out).read_text())["config"]


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err  # one line, no traceback
    return err


def test_stored_config_says_how_rows_are_computed(tiny_bert_dir, tmp_path, monkeypatch):
    # `auto` is the machine's fast precision (bfloat16 on CPUs with AVX512-BF16): pin what it means, so the
    # test says the same on every machine
    monkeypatch.setenv("MLMPROB_DTYPE", "float32")
    inp = _fasta(tmp_path / "in.fasta", 4)
    out = tmp_path / "o.jsonl"
    assert _score(tiny_bert_dir, inp, out, "--dtype", "auto") == 0  # auto: float32 here ($MLMPROB_DTYPE)
    block = _config(out)["computed_with"]
    assert block == {
        "dtype": "float32",
        "forward": "fused",
        "model_path": str(tiny_bert_dir.resolve()),
        "batch_tokens": 4096,
    }


def test_resume_with_another_dtype_is_refused(tiny_bert_dir, tmp_path, capsys, monkeypatch):
    inp = _fasta(tmp_path / "in.fasta", 24)
    out = tmp_path / "o.jsonl"
    assert _score(tiny_bert_dir, inp, out, "--dtype", "float32", "--limit", "16") == 0  # a run stopped at 16 rows
    capsys.readouterr()
    assert _score(tiny_bert_dir, inp, out, "--dtype", "bfloat16", "--resume") == 2
    err = _error(capsys)
    assert "computed_with.dtype='float32'" in err and "computed_with.dtype='bfloat16'" in err
    assert len(list(read_results(out))) == 16  # nothing was added
    assert _score(tiny_bert_dir, inp, out, "--dtype", "float32", "--resume") == 0
    assert len(list(read_results(out))) == 24
    # the forward path is part of it too
    capsys.readouterr()
    monkeypatch.setenv("MLMPROB_FUSED", "0")
    assert _score(tiny_bert_dir, inp, out, "--dtype", "float32", "--resume") == 2
    assert "computed_with.forward='fused'" in _error(capsys)


def test_an_output_written_before_the_block_resumes_as_before(tiny_bert_dir, tmp_path, capsys):
    inp = _fasta(tmp_path / "in.fasta", 6)
    out = tmp_path / "old.jsonl"
    assert _score(tiny_bert_dir, inp, out, "--limit", "3") == 0
    meta = json.loads(meta_path(out).read_text())
    del meta["config"]["computed_with"]  # as an older mlmprob wrote it
    meta_path(out).write_text(json.dumps(meta))
    assert _score(tiny_bert_dir, inp, out, "--resume") == 0
    assert len(list(read_results(out))) == 6
    assert "computed_with" not in _config(out)  # it does not vouch for rows it did not compute
    capsys.readouterr()
    assert _score(tiny_bert_dir, inp, out, "--resume", "--whole-word") == 2  # its own keys are still checked
    assert "whole_word" in _error(capsys)


def test_merge_refuses_parts_of_two_precisions(tiny_bert_dir, tmp_path, capsys):
    inp = _fasta(tmp_path / "in.fasta", 6)
    p1, p2 = tmp_path / "p1.jsonl", tmp_path / "p2.jsonl"
    assert _score(tiny_bert_dir, inp, p1, "--shard", "1/2", "--dtype", "float32") == 0
    assert _score(tiny_bert_dir, inp, p2, "--shard", "2/2", "--dtype", "bfloat16") == 0
    capsys.readouterr()
    merged = tmp_path / "m.jsonl"
    assert main(["merge", "--out", str(merged), str(p1), str(p2)]) == 2
    err = _error(capsys)
    assert err == (
        f"error: parts come from different runs: {p1} has computed_with.dtype='float32', "
        f"{p2} has computed_with.dtype='bfloat16'"
    )
    assert not merged.exists() and not merging_path(merged).exists()


def test_merge_writes_the_one_process_order(tiny_bert_dir, tmp_path):
    inp = _fasta(tmp_path / "in.fasta", 11)
    assert _score(tiny_bert_dir, inp, tmp_path / "one.jsonl") == 0
    order = [r["id"] for r in read_results(tmp_path / "one.jsonl")]
    parts = [tmp_path / "p1.jsonl", tmp_path / "p2.parquet", tmp_path / "p3.jsonl"]  # .tsv: test_run_identity
    for i, part in enumerate(parts, 1):
        assert _score(tiny_bert_dir, inp, part, "--shard", f"{i}/3") == 0
    merged = tmp_path / "m.jsonl"
    assert main(["merge", "--out", str(merged), *map(str, reversed(parts))]) == 0
    assert [r["id"] for r in read_results(merged)] == order
    assert _config(merged)["computed_with"]["dtype"] == "float32"


# -- a killed merge ---------------------------------------------------------------------------------
def _part(path, shard, ids):
    w = open_writer(path, config={"command": "t", "shard": shard})
    w.write([{"id": i, "v": float(len(i))} for i in ids])
    w.close(complete=True, shard=shard)


def _parts(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _part(a, "1/2", ["x0", "x2", "x4"])
    _part(b, "2/2", ["x1", "x3"])
    return a, b


def _expected(config, limit):
    return [f"x{i}" for i in range(5)]


def test_merge_reruns_over_what_a_killed_merge_left(tmp_path):
    a, b = _parts(tmp_path)
    out = tmp_path / "m.jsonl"
    tmp = merging_path(out)
    tmp.write_text('{"id": "x0", "v": 2.0}\n{"id": "x1"')  # a merge killed while writing
    meta_path(tmp).write_text('{"config": {}, "complete": false}')
    assert merge_parts(out, [a, b], expected_ids=_expected) == 5
    assert [r["id"] for r in read_results(out)] == [f"x{i}" for i in range(5)]
    assert json.loads(meta_path(out).read_text())["complete"] is True
    assert not tmp.exists() and not meta_path(tmp).exists() and not (tmp_path / "m.jsonl.lock").exists()
    with pytest.raises(MLMProbError, match="exists; merge does not overwrite"):
        merge_parts(out, [a, b])


def test_a_failed_merge_leaves_no_output(tmp_path, monkeypatch):
    a, b = _parts(tmp_path)
    out = tmp_path / "m.jsonl"
    import mlmprob.runtime.merge as merge

    def broken(p):
        yield from read_results(p)
        raise OSError("the disk went away")

    real = merge.read_results
    calls = []
    monkeypatch.setattr(merge, "read_results", lambda p: calls.append(p) or (real(p) if len(calls) <= 2 else broken(p)))
    with pytest.raises(OSError, match="went away"):
        merge_parts(out, [a, b])
    assert not out.exists() and not merging_path(out).exists() and not meta_path(out).exists()


def test_sigkill_of_merge_then_rerun(tmp_path):
    a, b = _parts(tmp_path)
    out = tmp_path / "m.jsonl"
    held = Held(rows=1)  # held once the merged rows are committed to the temporary file
    cmd = [sys.executable, "-m", "mlmprob", "merge", "--no-input-check", "--out", str(out), str(a), str(b)]
    proc = held.popen(cmd, {**os.environ, "PYTHONUNBUFFERED": "1"}, stderr=subprocess.PIPE, text=True)
    try:
        assert held.wait(what=lambda: proc.stderr.read()) == 5
        assert merging_path(out).exists()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        held.close()
    assert not out.exists()  # a killed merge leaves no output
    assert main(["merge", "--no-input-check", "--out", str(out), str(a), str(b)]) == 0
    assert sorted(r["id"] for r in read_results(out)) == [f"x{i}" for i in range(5)]
    assert not merging_path(out).exists()


# -- sample, folder mode ----------------------------------------------------------------------------
def test_folder_sample_refuses_another_seed(tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        "sample",
        "--model",
        str(tiny_bert_dir),
        "--seq",
        "A C D E F G H",
        "--chains",
        "1",
        "--epochs",
        "2",
        "--burn-in",
        "0",
        "--out",
        str(out),
        "--no-progress",
        "--no-plot",
        "--device",
        "cpu",
    ]
    assert main(argv) == 0
    head = json.loads((out / "run.jsonl").read_text().splitlines()[0])
    assert head["computed_with"]["seed"] == 0 and head["computed_with"]["dtype"] == "float32"
    capsys.readouterr()
    assert main([*argv, "--seed", "7"]) == 2
    err = _error(capsys)
    # the folder's rows (chains.jsonl, the one runner's output) are claimed first and name the seed both ways
    assert "written with seed=0" in err and "this run has seed=7" in err
    assert main([*argv, "--dtype", "bfloat16"]) == 2
    assert "computed_with.dtype='float32'" in _error(capsys)
    assert main([*argv, "--seed", "0"]) == 0  # the same run: resumed, not refused


# -- the block itself ---------------------------------------------------------------------------------
def test_int8_records_its_budget_and_a_resume_with_another_is_refused(tiny_bert_dir, tmp_path, capsys):
    from mlmprob.models.precision import int8_supported
    from mlmprob.runtime.provenance import computed_with

    block = computed_with("no/such/model", "int8", ["cpu"])
    assert block["batch_tokens"] == 4096 and block["int8_activations"] in (7, 8)
    # every dtype records its budget on a CPU (issue 49: it moves float32's last bits too)
    assert computed_with("no/such/model", "float32", ["cpu"], batch_tokens=256)["batch_tokens"] == 256
    if not int8_supported():
        pytest.skip("no fbgemm int8 kernels here")
    inp = _fasta(tmp_path / "in.fasta", 4)
    out = tmp_path / "q.jsonl"
    assert _score(tiny_bert_dir, inp, out, "--dtype", "int8", "--limit", "2") == 0
    capsys.readouterr()
    assert _score(tiny_bert_dir, inp, out, "--dtype", "int8", "--batch-tokens", "256", "--resume") == 2
    err = _error(capsys)
    assert "computed_with.batch_tokens=4096" in err and "computed_with.batch_tokens=256" in err


def test_auto_meaning_two_precisions_on_the_devices_is_refused(monkeypatch):
    import torch

    import mlmprob.runtime.device as device
    from mlmprob.runtime.provenance import resolved_dtype

    monkeypatch.delenv("MLMPROB_DTYPE", raising=False)
    monkeypatch.setattr(device, "resolve_device", lambda spec: torch.device(spec))
    monkeypatch.setattr(device, "auto_dtype", lambda dev: torch.bfloat16 if dev.type == "cuda" else torch.float32)
    assert resolved_dtype("auto", ["cuda:0", "cuda:1"]) == "bfloat16"
    with pytest.raises(MLMProbError, match="means bfloat16 on cuda:0 and float32 on cpu: one output would mix"):
        resolved_dtype("auto", ["cuda:0", "cpu"])


def test_thread_invariance_switched_off_is_recorded(monkeypatch):
    """Rows computed without the thread-count-invariant products differ in their last bits: a run with
    $MLMPROB_THREAD_INVARIANT=0 records it, so a resume with the default is refused (and vice versa)."""
    from mlmprob.runtime.provenance import computed_with

    assert "thread_invariant" not in computed_with("no/such/model", "float32", ["cpu"])
    monkeypatch.setenv("MLMPROB_THREAD_INVARIANT", "0")
    assert computed_with("no/such/model", "float32", ["cpu"])["thread_invariant"] is False


def test_int8_records_its_float_layers_where_there_are_any(tmp_path):
    """int8 keeps an encoder's first twelfth of layers in float32 (0.2.0): a run of a model with 12 or more layers
    records how many, so an int8 run started before that (every layer int8) is refused on resume instead of
    mixing the two schemes; smaller models record nothing (their values did not change)."""
    from types import SimpleNamespace

    from mlmprob.runtime.provenance import computed_with

    for n, want in ((4, None), (12, 1), (30, 2)):
        d = tmp_path / f"m{n}"
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"num_hidden_layers": n}))
        assert computed_with(str(d), "int8", ["cpu"]).get("int8_float_layers") == want
        assert "int8_float_layers" not in computed_with(str(d), "float32", ["cpu"])
    loaded = SimpleNamespace(
        dtype="int8", fused=True, model=SimpleNamespace(config=SimpleNamespace(num_hidden_layers=33))
    )
    assert computed_with("hub/id", "int8", ["cpu"], mlm=loaded)["int8_float_layers"] == 2
    assert "int8_float_layers" not in computed_with("hub/id", "int8", ["cpu"])  # unknown: nothing recorded
