"""A record's result depends on the record alone (issue 19, part 2): ``score``, ``variants`` and streamed
``sample`` write the same values, to the bit, in one process, as three shards merged, with two worker
processes, with work units of one record, from a shuffled input, and on Ray actors; in float32 and bfloat16.
Uses the tiny random BERT of conftest (one residue per word)."""

import csv
import json
import random

import pytest

from mlmprob.cli import main
from mlmprob.runtime import engine
from mlmprob.runtime.writers import read_results

pytestmark = pytest.mark.usefixtures("one_thread")
AA = "ACDEFGHIKL"
WT = "MKTAYIAKQRQISFVKSHFS"
WAYS = ("shards", "workers", "chunk1", "shuffled", "ray")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray instance for the module's ``--engine ray`` runs (the CLI uses a running one)."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        yield None
        return
    import logging

    ray.init(num_cpus=2, log_to_driver=False, include_dashboard=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()


def _fasta(path, ids):
    rng = random.Random(0)
    seqs = {i: " ".join(rng.choice(AA) for _ in range(rng.randint(4, 30))) for i in range(max(ids) + 1)}
    path.write_text("".join(f">s{i}\n{seqs[i]}\n" for i in ids))
    return path


def _mutants(path, order):
    rng = random.Random(1)
    muts = set()
    while len(muts) < 40:
        sites = sorted(rng.sample(range(len(WT)), rng.randint(1, 3)))
        muts.add(
            ":".join(f"{WT[s]}{s + 1}{rng.choice([c for c in 'ACDEFGHIKLMNPQRSTVWY' if c != WT[s]])}" for s in sites)
        )
    muts = sorted(muts)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mutant"])
        w.writerows([muts[i]] for i in order)
    return path


def _argv(command, model, inp, out, dtype):
    common = ["--model", str(model), "--out", str(out), "--no-progress", "--device", "cpu", "--dtype", dtype]
    if command == "score":
        return ["score", str(inp), *common]
    if command == "variants":
        return [
            "variants",
            str(inp),
            "--wild-type",
            WT,
            "--methods",
            "wt_marginals,masked_marginals,masked_marginals_mt,mutant_marginals,hcb,pll_delta",
            *common,
        ]
    return [
        "sample",
        "--input",
        str(inp),
        "--chains",
        "2",
        "--epochs",
        "2",
        "--burn-in",
        "1",
        "--block-size",
        "3:1",
        *common,
    ]


def _input(command, d, shuffled):
    # score: more records than one chunk (16), so that two workers and three shards each get work of their own
    order = list(range(12 if command == "sample" else 40))
    if shuffled:
        random.Random(5).shuffle(order)
    name = ("shuffled" if shuffled else "in") + (".csv" if command == "variants" else ".fasta")
    return (_mutants if command == "variants" else _fasta)(d / name, order)


def _rows(path):
    """``id -> row`` with every value as written (JSON numbers parse back to the same float)."""
    rows = list(read_results(path))
    out = {r["id"]: json.dumps(r, sort_keys=True) for r in rows}
    assert len(out) == len(rows)
    return out


def _run(command, way, model, d, dtype, monkeypatch):
    inp = _input(command, d, way == "shuffled")
    out = d / f"{way}.jsonl"
    argv = _argv(command, model, inp, out, dtype)
    if way == "shards":
        parts = []
        for i in (1, 2, 3):
            part = d / f"part{i}.jsonl"
            assert main(_argv(command, model, inp, part, dtype) + ["--shard", f"{i}/3"]) == 0
            parts.append(str(part))
        assert main(["merge", "--out", str(out), *parts]) == 0
        return out
    if way == "workers":
        argv += ["--workers", "2"]
    elif way == "ray":
        pytest.importorskip("ray.data", reason="Ray is not installed")
        argv += ["--engine", "ray", "--workers", "2"]
    elif way == "chunk1":
        chunked = engine.chunked
        monkeypatch.setattr(engine, "chunked", lambda items, size: chunked(items, 1))
    assert main(argv) == 0
    return out


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("command", ["score", "variants", "sample"])
def test_a_records_values_do_not_depend_on_how_the_work_was_split(
    command, dtype, tiny_bert_dir, tmp_path, monkeypatch, capsys
):
    ref_dir = tmp_path / "one"
    ref_dir.mkdir()
    ref = _rows(_run(command, "one", tiny_bert_dir, ref_dir, dtype, monkeypatch))
    assert len(ref) >= 12
    for way in WAYS:
        d = tmp_path / way
        d.mkdir()
        got = _rows(_run(command, way, tiny_bert_dir, d, dtype, monkeypatch))
        monkeypatch.undo()
        assert got.keys() == ref.keys(), way
        diff = [k for k in ref if got[k] != ref[k]]
        assert diff == [], (
            f"{command} {dtype} {way}: {len(diff)} record(s) differ, e.g. {got[diff[0]]} vs {ref[diff[0]]}"
        )
    capsys.readouterr()
