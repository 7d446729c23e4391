"""``mlmprob score --likelihood loglik`` and ``mlmprob variants --methods chain`` end to end on a tiny model."""

import json

import pytest

from mlmprob import load_mlm, loglik
from mlmprob.cli import main
from mlmprob.likelihood.records import LOGLIK_FIELDS, record_generator

SEQS = {"a": "ACDEFGHIK", "b": "MN", "c": "PQRSTVW"}


@pytest.fixture
def fasta(tmp_path):
    p = tmp_path / "in.fasta"
    p.write_text("".join(f">{k}\n{v}\n" for k, v in SEQS.items()))
    return p


def test_score_loglik_columns_equal_loglik(fasta, tmp_path, tiny_bert_dir, one_thread):
    out = tmp_path / "s.jsonl"
    args = [
        "score",
        str(fasta),
        "--model",
        str(tiny_bert_dir),
        "--likelihood",
        "loglik",
        "--orders",
        "4",
        "--per-order",
        "--seed",
        "3",
        "--no-progress",
    ]
    assert main(args + ["--out", str(out)]) == 0
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    mlm = load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")
    for k, seq in SEQS.items():
        r = rows[k]
        ids = mlm.encode([seq]).input_ids
        want = loglik(mlm, ids, order="random", n_orders=4, generator=record_generator(3, seq))
        assert r["loglik_mixture"] == pytest.approx(float(want.mixture[0]), abs=1e-6)
        assert r["loglik_elbo"] == pytest.approx(float(want.elbo[0]), abs=1e-6)
        assert r["loglik_per_token"] == pytest.approx(r["loglik_mixture"] / r["n_tokens"])
        assert r["loglik_elbo"] <= r["loglik_mixture"] + 1e-9 and "pll" in r
        assert len(r["loglik_per_order"]) == r["loglik_orders"]
    assert rows["b"]["loglik_exact"] and rows["b"]["loglik_orders"] == 2 and not rows["a"]["loglik_exact"]
    assert rows["a"]["loglik_outside_mass"] > 0  # the model puts some mass on [CLS], [UNK], ...
    # a record's orders depend on the record alone
    alone = tmp_path / "b.fasta"
    alone.write_text(f">b\n{SEQS['a']}\n")
    out2 = tmp_path / "b.jsonl"
    assert main(args[:1] + [str(alone)] + args[2:] + ["--out", str(out2)]) == 0
    assert json.loads(out2.read_text())["loglik_per_order"] == rows["a"]["loglik_per_order"]
    tsv = tmp_path / "s.tsv"
    assert main(args + ["--out", str(tsv)]) == 2  # --per-order needs a list column
    assert main([a for a in args if a != "--per-order"] + ["--out", str(tsv)]) == 0
    head = tsv.read_text().splitlines()[0].split("\t")
    assert head[-len(LOGLIK_FIELDS) :] == list(LOGLIK_FIELDS)


def test_variants_chain(tmp_path, tiny_bert_dir, one_thread, capsys):
    csv = tmp_path / "v.csv"
    csv.write_text("mutant\nC2W\nC2W:K9A\nA1D:E4F:I8K\n")
    out = tmp_path / "v.jsonl"
    assert (
        main(
            [
                "variants",
                str(csv),
                "--wild-type",
                "ACDEFGHIK",
                "--model",
                str(tiny_bert_dir),
                "--methods",
                "masked_marginals,chain",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows[0]["chain"] == pytest.approx(rows[0]["masked_marginals"], abs=1e-9)
    assert all(isinstance(r["chain"], float) for r in rows)
    bad = ["variants", str(csv), "--wild-type", "ACDEFGHIK", "--model", str(tiny_bert_dir), "--methods", "chian"]
    with pytest.raises(SystemExit) as usage:  # refused by the flag itself (its field's parse function): a usage error
        main([*bad, "--out", str(tmp_path / "x.jsonl"), "--no-progress"])
    assert usage.value.code == 2
    assert "chain" in capsys.readouterr().err


def test_likelihood_loglik_stores_its_name_and_resumes(fasta, tmp_path, tiny_bert_dir, one_thread, capsys):
    # `score --likelihood loglik` (the name of mlmprob.loglik and its columns; not the variant score `chain`):
    # the former spelling `chain` is refused; the configuration stores `loglik`, and a run written with it resumes
    base = ["score", str(fasta), "--model", str(tiny_bert_dir), "--orders", "3", "--no-progress"]
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    with pytest.raises(SystemExit) as e:
        main(base + ["--likelihood", "chain", "--out", str(old)])
    assert e.value.code == 2 and "invalid choice: 'chain'" in capsys.readouterr().err and not old.exists()
    assert main(base + ["--likelihood", "loglik", "--out", str(old)]) == 0
    assert main(base + ["--likelihood", "loglik", "--out", str(new)]) == 0
    assert old.read_text() == new.read_text()
    assert json.loads(old.with_name("old.jsonl.meta.json").read_text())["config"]["likelihood"] == "loglik"
    assert main(base + ["--likelihood", "loglik", "--out", str(old), "--resume"]) == 0
    assert "3 already there" in capsys.readouterr().err
    assert main(base + ["--likelihood", "loglik", "--pll", "one-pass"]) == 2
    assert "--likelihood loglik cannot be combined" in capsys.readouterr().err
