"""``mlmprob joints`` on the runtime layer: the pair is the unit (shards, workers, resume, one writer per
OUT, every input format). Uses the tiny random BERT of conftest (one residue per word)."""

import json
import random

import pytest

from mlmprob.cli import main
from mlmprob.errors import MLMProbError
from mlmprob.joints.job import JointsSpec, load_records, pair_units, read_sequences
from mlmprob.runtime.lock import WriterLock
from mlmprob.runtime.writers import read_results

AA = "ACDEFGHIKLMNPQRSTVWY"
pytestmark = pytest.mark.usefixtures("one_thread")
FAST = ("--n-pairs", "3", "--top-k", "4", "--ag-steps", "10", "--no-progress")


def _seqs(n=7, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(AA) for _ in range(rng.randint(4, 12))) for _ in range(n)]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("joints") / "seqs.fasta"
    path.write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(_seqs())))
    return path


def _joints(model_dir, data, out, *extra):
    return main(
        [
            "joints",
            "--model",
            str(model_dir),
            "--data",
            str(data),
            "--out",
            str(out),
            "--device",
            "cpu",
            *FAST,
            *map(str, extra),
        ]
    )


@pytest.fixture(scope="module")
def reference(tiny_bert_dir, data, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref")
    assert _joints(tiny_bert_dir, data, out) == 0
    return [r for r in read_results(out / "pairs.jsonl")]


def _same(rows, ref, tol=1e-5):
    by = {r["id"]: r for r in rows}
    assert sorted(by) == sorted(r["id"] for r in ref) and len(by) == len(rows)
    for r in ref:
        got = by[r["id"]]
        assert (got["seq_index"], got["a"], got["b"], got["K"]) == (r["seq_index"], r["a"], r["b"], r["K"])
        assert (got["a_token_index"], got["b_token_index"]) == (r["a_token_index"], r["b_token_index"])
        for method, m in r["metrics"].items():
            for k, v in m.items():  # null: -inf or NaN (gold pair outside the top-k candidates)
                w = got["metrics"][method][k]
                assert (v is None and w is None) or abs(w - v) <= tol, (r["id"], method, k)


def test_one_process_writes_every_pair_in_order_with_a_report(reference, tiny_bert_dir, data, tmp_path):
    assert [r["id"] for r in reference] == [u.id for u in pair_units(("random", "contiguous"), 3)]
    assert all(r["kind"] == "pair" and r["id"] == f"{r['scheme']}/{r['i']}" for r in reference)
    assert all(r["b"] - r["a"] == 1 for r in reference if r["scheme"] == "contiguous")


def test_shards_together_equal_one_process(reference, tiny_bert_dir, data, tmp_path, capsys):
    order = [r["id"] for r in reference]
    for i in (1, 2):
        assert _joints(tiny_bert_dir, data, tmp_path / f"s{i}", "--shard", f"{i}/2") == 0
    parts = [list(read_results(tmp_path / f"s{i}" / "pairs.jsonl")) for i in (1, 2)]
    assert [r["id"] for r in parts[0]] == order[0::2] and [r["id"] for r in parts[1]] == order[1::2]
    _same(parts[0] + parts[1], reference)
    assert "(shard 1/2)" in (tmp_path / "s1" / "report.md").read_text()
    all_dir = tmp_path / "all"
    all_dir.mkdir()
    assert (
        main(
            ["merge", "--out", str(all_dir / "pairs.jsonl"), *(str(tmp_path / f"s{i}" / "pairs.jsonl") for i in (1, 2))]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["joints", "--out", str(all_dir), "--report-only"]) == 0
    assert "| AG |" in capsys.readouterr().out
    assert json.loads((all_dir / "summary.json").read_text())["table"]["random"]["ag"]["n"] == 3
    # a missing shard is refused by merge
    assert main(["merge", "--out", str(tmp_path / "one.jsonl"), str(tmp_path / "s1" / "pairs.jsonl")]) == 2


def test_workers_equal_one_process(reference, tiny_bert_dir, data, tmp_path):
    assert _joints(tiny_bert_dir, data, tmp_path / "w", "--workers", "2") == 0
    rows = list(read_results(tmp_path / "w" / "pairs.jsonl"))
    assert [r["id"] for r in rows] == [r["id"] for r in reference]  # written in pair order
    _same(rows, reference)


def test_resume_after_a_truncated_output_gives_every_pair_once(reference, tiny_bert_dir, data, tmp_path, capsys):
    out = tmp_path / "r"
    assert _joints(tiny_bert_dir, data, out) == 0
    path = out / "pairs.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][:40])  # a record cut by a kill
    capsys.readouterr()
    assert _joints(tiny_bert_dir, data, out) == 0  # joints always resumes
    assert "4 new pairs, 6/6" in capsys.readouterr().err
    rows = list(read_results(path))
    _same(rows, reference)
    # a larger --n-pairs adds the missing pairs only; the first ones are kept
    assert _joints(tiny_bert_dir, data, out, "--n-pairs", "4") == 0
    assert "2 new pairs, 8/8" in capsys.readouterr().err
    assert len(list(read_results(path))) == 8


def test_a_second_writer_and_other_configurations_are_refused(reference, tiny_bert_dir, data, tmp_path, capsys):
    out = tmp_path / "o"
    assert _joints(tiny_bert_dir, data, out) == 0
    capsys.readouterr()
    with WriterLock(out / "pairs.jsonl"):  # another process is writing OUT
        assert _joints(tiny_bert_dir, data, out) == 2
        err = capsys.readouterr().err.strip()
        assert "being written by another process" in err and "\n" not in err
    for extra, what in [
        (("--seed", "1"), "seed=0"),
        (("--shard", "1/2"), "shard='1/1'"),
        (("--schemes", "random"), "schemes="),
        (("--dtype", "bfloat16"), "dtype='float32'"),
    ]:
        assert _joints(tiny_bert_dir, data, out, *extra) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "different configuration" in err and what in err and "\n" not in err
    for args, msg in [
        (["joints", "--out", str(out)], "--data is required"),
        (["joints", "--out", str(tmp_path / "x"), "--data", str(tmp_path / "none.txt")], "does not exist"),
        (
            ["joints", "--out", str(tmp_path / "x"), "--data", str(data), "--format", "csv"],
            "column 'HC' not in seqs.fasta",
        ),
        (
            ["joints", "--out", str(tmp_path / "x"), "--data", str(data), "--workers", "2", "--devices", "cpu"],
            "not both",
        ),
    ]:
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and msg in err and "\n" not in err
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


def _before_0_2(r: dict) -> dict:
    """A record as the runner wrote it before 0.2.0: no id, ``a`` and ``b`` its token indices."""
    old = {k: v for k, v in r.items() if k not in ("id", "a_token_index", "b_token_index")}
    return {**old, "a": r["a_token_index"], "b": r["b_token_index"]}


def test_an_older_runners_file_is_upgraded_and_resumed(reference, tiny_bert_dir, data, tmp_path, capsys):
    out = tmp_path / "old"
    out.mkdir()
    cfg = JointsSpec(n_pairs=3, top_k=4, ag_steps=10).reading(str(data))
    legacy = {
        "model": str(tiny_bert_dir),
        "data": str(data),
        **{k: v for k, v in cfg.recorded().items() if k != "format"},
    }
    legacy["column"] = "HC"  # the old CLI default, meaningless for FASTA
    lines = [json.dumps({"kind": "config", "config": legacy})]
    lines += [json.dumps(_before_0_2(r)) for r in reference[:4]]
    (out / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    assert load_records(out / "pairs.jsonl")[0] == legacy
    capsys.readouterr()
    assert _joints(tiny_bert_dir, data, out) == 2  # 0-based a and b: not continued
    err = capsys.readouterr().err
    assert "a and b are 0-based token indices" in err and "convert_positions.py" in err
    assert (out / "pairs.jsonl").read_text() == "\n".join(lines) + "\n"  # untouched
    assert _convert(out).endswith("4 pairs converted")  # the script beside docs/results/joints
    lines = (out / "pairs.jsonl").read_text().splitlines()
    assert load_records(out / "pairs.jsonl")[0] == {**legacy, "positions_base": 1}
    assert [json.loads(x) for x in lines[1:]] == [{k: v for k, v in r.items() if k != "id"} for r in reference[:4]]
    assert _joints(tiny_bert_dir, data, out) == 0
    assert "2 new pairs, 6/6" in capsys.readouterr().err
    _same(list(read_results(out / "pairs.jsonl")), reference)
    (out / "pairs.jsonl.meta.json").unlink()
    (out / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    assert _joints(tiny_bert_dir, data, out, "--seed", "5") == 2
    assert "different configuration" in capsys.readouterr().err


def _convert(folder):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs" / "results" / "joints" / "convert_positions.py"
    spec = importlib.util.spec_from_file_location("convert_positions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.convert(folder)


def test_every_input_format_gives_the_same_sequences(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    seqs = _seqs(6, seed=1)
    rows = seqs[:2] + ["NA"] + seqs[2:]
    (tmp_path / "a.txt").write_text("\n".join(rows) + "\n\n")
    (tmp_path / "a.fasta").write_text("".join(f">r{i}\n{s}\n" for i, s in enumerate(rows)))
    (tmp_path / "a.csv").write_text("id,HC,other\n" + "".join(f"r{i},{s},x\n" for i, s in enumerate(rows)))
    (tmp_path / "a.tsv").write_text("id\tVH\n" + "".join(f"r{i}\t{s}\n" for i, s in enumerate(rows)))
    (tmp_path / "a.jsonl").write_text(
        "".join(json.dumps({"id": f"r{i}", "sequence": s}) + "\n" for i, s in enumerate(rows))
    )
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(len(rows))], "seq": rows}), tmp_path / "a.parquet")
    for name, column in [
        ("a.txt", None),
        ("a.fasta", None),
        ("a.csv", None),
        ("a.tsv", "VH"),
        ("a.jsonl", None),
        ("a.parquet", None),
    ]:
        assert read_sequences(tmp_path / name, column) == seqs, name
        cfg = JointsSpec(column=column).reading(str(tmp_path / name))
        assert read_sequences(tmp_path / name, cfg.column, 3, cfg.format) == seqs[:3]
    assert JointsSpec().reading("x.csv").column == "HC" and JointsSpec(column="HC").reading("x.txt").column is None
    with pytest.raises(MLMProbError, match="column 'HC' not in a.tsv"):
        read_sequences(tmp_path / "a.tsv")
    with pytest.raises(MLMProbError, match="unknown data format"):
        JointsSpec(format="xml")
    (tmp_path / "e.txt").write_text("na\n\n")
    with pytest.raises(MLMProbError, match="no sequences in"):
        read_sequences(tmp_path / "e.txt")
