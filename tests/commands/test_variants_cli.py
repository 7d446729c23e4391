"""``mlmprob variants`` end to end on the tiny random ESM of conftest: the CLI's values equal the API
(score_variants, saturate), input modes agree, bad rows are named or counted, shards merge, resume
continues, and --evaluate reports hand-checkable numbers."""

import csv
import json

import pytest
import torch

from mlmprob import score_variants
from mlmprob.cli import main
from mlmprob.models.spec import ModelSpec
from mlmprob.runtime.writers import read_results
from mlmprob.variants import VariantsSpec, encode_variants, saturate
from mlmprob.variants.report import evaluate_methods
from mlmprob.variants.stream import VariantsJob, window_start
from mlmprob.variants.units import VariantUnit

pytestmark = pytest.mark.usefixtures("one_thread")

WT = "MKTAYIAKQRQIS"
MUTANTS = ["A4C", "A4C:Q11E", "K2E", "T3W", "M1A:Y5F:S13P", "I6V", "Q9A:R10K"]
METHODS = ["wt_marginals", "masked_marginals", "masked_marginals_all", "hcb"]


def _mutate(mutant):
    s = list(WT)
    for m in mutant.split(":"):
        s[int(m[1:-1]) - 1] = m[-1]
    return "".join(s)


def _cli(tmp_path, esm_dir, *args):
    return main(["variants", *map(str, args), "--model", str(esm_dir), "--no-progress", "--device", "cpu"])


def _values(path, methods=METHODS):
    return {r["id"]: [float(r[m]) for m in methods] for r in read_results(path)}


@pytest.fixture(scope="module")
def dms(tmp_path_factory):
    d = tmp_path_factory.mktemp("dms")
    with open(d / "dms.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mutant", "mutated_sequence", "DMS_score"])
        for k, m in enumerate(MUTANTS):
            w.writerow([m, _mutate(m), k * 0.5 - 1])
    return d / "dms.csv"


@pytest.fixture(scope="module")
def reference(esm_dir, dms, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "one.jsonl"
    assert _cli(None, esm_dir, dms, "--wild-type", WT, "--out", out) == 0
    return out


def test_csv_mode_equals_score_variants(reference, esm):
    ev = encode_variants(esm, WT, MUTANTS)
    ref = score_variants(esm, ev.wild_type, ev.variants, methods=METHODS)
    got = _values(reference)
    assert list(got) == MUTANTS
    for n, m in enumerate(MUTANTS):
        assert got[m] == pytest.approx([float(ref[k][n]) for k in METHODS], abs=1e-5)
    rows = list(read_results(reference))
    assert rows[1]["mutant"] == "A4C:Q11E" and rows[1]["n_mutations"] == 2 and rows[4]["n_mutations"] == 3


def test_full_sequence_mode_equals_csv_mode(reference, esm_dir, dms, tmp_path):
    fasta = tmp_path / "seqs.fasta"
    fasta.write_text("".join(f">v{k}\n{_mutate(m)}\n" for k, m in enumerate(MUTANTS)) + f">wt\n{WT}\n")
    out = tmp_path / "seq.jsonl"
    assert _cli(tmp_path, esm_dir, fasta, "--wild-type", WT, "--out", out) == 0
    rows = list(read_results(out))
    ref = _values(reference)
    assert [r["mutant"] for r in rows[:-1]] == MUTANTS
    for r in rows[:-1]:
        assert [r[m] for m in METHODS] == pytest.approx(ref[r["mutant"]], abs=1e-6)
    assert rows[-1]["mutant"] == "" and all(rows[-1][m] == 0.0 for m in METHODS)  # the wild type itself
    # the CSV's mutated_sequence column, with the mutant column ignored (--column), gives the same
    out2 = tmp_path / "col.tsv"
    assert _cli(tmp_path, esm_dir, dms, "--wild-type", WT, "--column", "mutated_sequence", "--out", out2) == 0
    assert [r["mutant"] for r in read_results(out2)] == MUTANTS
    assert list(_values(out2).values()) == [pytest.approx(v, abs=1e-6) for v in ref.values()]


def test_saturate_with_limit_is_refused_before_any_work(tmp_path, capsys):
    """It failed after the work, 'the output lacks 149 single mutants', without naming --limit (issue 35)."""
    out = tmp_path / "sat.jsonl"
    assert _cli(tmp_path, "/nonexistent/model", "--saturate", "--wild-type", WT, "--limit", "3", "--out", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --limit does not go with --saturate"), err
    assert list(tmp_path.iterdir()) == []


def test_saturate_writes_tables_equal_to_saturate(esm_dir, esm, tmp_path):
    out = tmp_path / "sat.tsv"
    assert _cli(tmp_path, esm_dir, "--saturate", "--wild-type", WT, "--offset", "24", "--out", out) == 0
    assert len(list(read_results(out))) == 19 * len(WT)
    ref = saturate(esm, esm.encode([WT]).input_ids[0], offset=24)
    grid = list(csv.reader((tmp_path / "sat.heatmap.csv").open()))
    assert grid[0] == ["residue", *"ACDEFGHIKLMNPQRSTVWY"] and len(grid) == 1 + len(WT)
    assert grid[1][0] == "M24" and all(len(r) == 21 for r in grid)
    got = torch.tensor([[float(v) for v in r[1:]] for r in grid[1:]], dtype=torch.float64)
    assert torch.allclose(got, ref.masked_marginals, atol=1e-5)
    long = list(csv.DictReader((tmp_path / "sat.saturation.csv").open()))
    assert len(long) == 19 * len(WT) and long[0]["mutant"] == "M24A" and long[0]["position"] == "1"
    assert float(long[0]["wt_marginals"]) == pytest.approx(float(ref.wt_marginals[0, 0]), abs=1e-5)
    assert (tmp_path / "sat.heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


BAD = [
    ("K4C", "row 2: 'K4C' states wild-type 'K' at residue 4, but the sequence has 'A' there"),
    ("A99C", "row 3: residue 99 of 'A99C' is outside the sequence (residues 1..13)"),
    ("A4J", "row 4: mutant residue 'J' in 'A4J' is not in the alphabet ACDEFGHIKLMNPQRSTVWY"),
]


def test_bad_rows_are_named_or_skipped_and_counted(esm_dir, tmp_path, capsys):
    for k, (bad, message) in enumerate(BAD):
        path = tmp_path / f"bad{k}.csv"
        lines = ["mutant", "A4C"] + [f"K2{m}" for m in "ED"[:k]] + [bad]  # valid fillers, distinct ids
        path.write_text("\n".join(lines) + "\n")
        capsys.readouterr()
        assert _cli(tmp_path, esm_dir, path, "--wild-type", WT, "--out", tmp_path / f"b{k}.jsonl") == 2
        assert capsys.readouterr().err.strip() == f"error: {message}"
    path = tmp_path / "mixed.csv"
    path.write_text("mutant\nA4C\nK4C\nA99C\nT3W\nA4J\n")
    out = tmp_path / "mixed.jsonl"
    assert _cli(tmp_path, esm_dir, path, "--wild-type", WT, "--out", out, "--skip-invalid") == 0
    assert [r["id"] for r in read_results(out)] == ["A4C", "T3W"]
    assert "(3 invalid row(s) skipped)" in capsys.readouterr().err
    assert [s[0] for s in json.loads((tmp_path / "mixed.jsonl.meta.json").read_text())["skipped"]] == [
        "K4C",
        "A99C",
        "A4J",
    ]


def test_bad_arguments(esm_dir, tmp_path, dms, capsys):
    seqs = tmp_path / "s.fasta"
    seqs.write_text(f">a\n{WT}A\n")
    assert _cli(tmp_path, esm_dir, seqs, "--wild-type", WT) == 2
    assert capsys.readouterr().err.strip() == "error: row 1 ('a'): the sequence has 14 residues, the wild type 13"
    assert _cli(tmp_path, esm_dir, dms, "--saturate", "--wild-type", WT) == 2
    with pytest.raises(SystemExit) as usage:  # refused by the flag itself (its field's parse function): a usage error
        _cli(tmp_path, esm_dir, dms, "--wild-type", WT, "--methods", "hcb,nope")
    assert usage.value.code == 2 and "unknown variant scoring method 'nope'" in capsys.readouterr().err
    assert _cli(tmp_path, esm_dir, dms, "--wild-type", WT, "--evaluate", "--out", tmp_path / "e.jsonl") == 2
    assert "--evaluate needs --label" in capsys.readouterr().err
    # red-team: a label that is not a number was found only after the whole scoring; now before it starts
    assert (
        _cli(
            tmp_path, esm_dir, dms, "--wild-type", WT, "--evaluate", "--label", "mutant", "--out", tmp_path / "l.jsonl"
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err == "error: row 1: label 'A4C' in column 'mutant' is not a number", err
    assert not (tmp_path / "l.jsonl").exists()


def test_shards_merge_to_the_one_process_run(reference, esm_dir, dms, tmp_path, capsys):
    parts = [tmp_path / "p1.jsonl", tmp_path / "p2.parquet"]
    for i, part in enumerate(parts, 1):
        assert _cli(tmp_path, esm_dir, dms, "--wild-type", WT, "--out", part, "--shard", f"{i}/2") == 0
    assert len(list(read_results(parts[0]))) == 4 and len(list(read_results(parts[1]))) == 3
    merged = tmp_path / "all.jsonl"
    assert main(["merge", "--out", str(merged), *map(str, parts)]) == 0
    ref = _values(reference)
    got = _values(merged)
    assert got.keys() == ref.keys() and all(got[k] == pytest.approx(ref[k], abs=1e-6) for k in ref)
    capsys.readouterr()
    assert main(["merge", "--out", str(tmp_path / "bad.jsonl"), str(parts[0])]) == 2  # shard 2/2 missing
    assert "missing" in capsys.readouterr().err


def test_resume_after_a_truncated_output(reference, esm_dir, dms, tmp_path):
    out = tmp_path / "r.jsonl"
    text = reference.read_text().splitlines(keepends=True)
    out.write_text("".join(text[:3]) + text[3][:25])  # a run killed inside the fourth row
    meta = json.loads((reference.parent / "one.jsonl.meta.json").read_text())
    meta["complete"] = False
    (tmp_path / "r.jsonl.meta.json").write_text(json.dumps(meta))
    assert _cli(tmp_path, esm_dir, dms, "--wild-type", WT, "--out", out, "--resume") == 0
    ids = [r["id"] for r in read_results(out)]
    assert sorted(ids) == sorted(MUTANTS) and len(ids) == len(set(ids))
    ref = _values(reference)
    assert all(v == pytest.approx(ref[k], abs=1e-6) for k, v in _values(out).items())


def test_evaluate_hand_checkable(esm_dir, reference, tmp_path, capsys):
    # metrics by hand: ranks (1, 2, 3, 4) against (1, 3, 2, 4): Spearman 1 - 6 * 2 / (4 * 15) = 0.8
    scores = {k: {"m": v} for k, v in zip("abcd", [1.0, 2.0, 3.0, 4.0])}
    r = evaluate_methods(scores, dict(zip("abcd", [1.0, 3.0, 2.0, 4.0])), ["m"], n_boot=50)
    assert r["m"]["spearman"]["value"] == pytest.approx(0.8) and "auroc" not in r["m"] and r["m"]["n"] == 4
    r = evaluate_methods(scores, dict(zip("abcd", [0.0, 1.0, 0.0, 1.0])), ["m"], n_boot=50)
    assert r["m"]["auroc"]["value"] == pytest.approx(0.75)  # 3 of the 4 (pos, neg) pairs ordered
    # through the CLI: labels = the masked_marginals scores' order, and 0/1 by the median
    ref = _values(reference)
    mm = {k: v[1] for k, v in ref.items()}
    order = sorted(mm, key=mm.get)
    path = tmp_path / "lab.csv"
    path.write_text(
        "mutant,score,bin\n" + "".join(f"{k},{order.index(k) * 10},{int(order.index(k) >= 4)}\n" for k in MUTANTS)
    )
    out = tmp_path / "ev.jsonl"
    capsys.readouterr()
    assert (
        _cli(
            tmp_path,
            esm_dir,
            path,
            "--wild-type",
            WT,
            "--out",
            out,
            "--label",
            "bin",
            "--evaluate",
            "--methods",
            "masked_marginals",
            "--n-boot",
            "200",
            "--seed",
            "3",
        )
        == 0
    )
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["method", "n", "Spearman", "AUROC", "NDCG@10%", "recall@10%"]
    ev = json.loads((tmp_path / "ev.eval.json").read_text())["methods"]["masked_marginals"]
    assert ev["n"] == 7 and ev["auroc"]["value"] == 1.0 and ev["auroc"]["low"] == 1.0
    assert ev["ndcg"]["value"] == 1.0  # k = 1: the best prediction is a 1
    # ranks 1..7 against tied label ranks (2.5 x 4, 6 x 3): r = 21 / sqrt(28 * 21) = sqrt(3 / 4)
    assert ev["spearman"]["value"] == pytest.approx(0.75**0.5, abs=1e-12)


class Limited:
    """The tiny ESM with a hard limit of ``max_length`` tokens (as sapiens / antiberty have)."""

    def __init__(self, mlm, max_length):
        self.mlm, self.max_length = mlm, max_length

    def __getattr__(self, name):
        return getattr(self.mlm, name)


def test_long_wild_type_scored_in_a_window_around_the_sites(esm):
    wt = WT + "ACDEFGHIKL"  # 23 residues, window 8 (10 tokens - 2)
    job = VariantsJob(
        model_spec=ModelSpec("unused"), wild_type=wt, spec=VariantsSpec(methods=METHODS), skip_invalid=True
    )
    state = job.prepare(Limited(esm, 10))
    assert state.window == 8
    units = [
        VariantUnit("A4C", 1, mutant="A4C"),
        VariantUnit("F18W:I21A", 2, mutant="F18W:I21A"),
        VariantUnit("M1A:Q9E", 3, mutant="M1A:Q9E"),
    ]
    rows, skipped = job.run(state, units)
    assert [r["window"] for r in rows] == [1, 15] and skipped[0][0] == "M1A:Q9E"
    assert "sites span 9 residues; the model's window holds 8" in skipped[0][1]
    assert window_start([17, 20], 23, 8) == 14  # centre (17 + 20) // 2 = 18, minus 8 // 2
    for r, (start, local) in zip(rows, [(0, ["A4C"]), (14, ["F4W:I7A"])]):
        ev = encode_variants(esm, wt[start : start + 8], local)
        ref = score_variants(esm, ev.wild_type, ev.variants, methods=METHODS)
        assert [r[m] for m in METHODS] == pytest.approx([float(ref[m][0]) for m in METHODS], abs=1e-5)


def test_chain_orders_and_seed_reach_score_variants_and_resume_checks_them(esm_dir, esm, dms, tmp_path, capsys):
    out = tmp_path / "chain.jsonl"
    args = (dms, "--wild-type", WT, "--methods", "masked_marginals,chain", "--out", out)
    assert _cli(tmp_path, esm_dir, *args, "--chain-orders", "2", "--chain-seed", "5") == 0
    ev = encode_variants(esm, WT, MUTANTS)
    got = _values(out, ["masked_marginals", "chain"])
    for seed, orders, same in ((5, 2, True), (0, 6, False)):  # M1A:Y5F:S13P: 3! = 6 orders, 2 of them drawn
        ref = score_variants(esm, ev.wild_type, ev.variants, methods=["chain"], chain_orders=orders, chain_seed=seed)[
            "chain"
        ]
        close = [got[m][1] == pytest.approx(float(ref[n]), abs=1e-5) for n, m in enumerate(MUTANTS)]
        assert all(close) if same else not close[4]
    assert got["A4C"][1] == pytest.approx(got["A4C"][0], abs=1e-6)  # a single mutant: chain = masked_marginals
    meta = json.loads((tmp_path / "chain.jsonl.meta.json").read_text())
    assert meta["config"]["chain_orders"] == 2 and meta["config"]["chain_seed"] == 5
    for changed in (("--chain-orders", "3", "--chain-seed", "5"), ("--chain-orders", "2", "--chain-seed", "6")):
        capsys.readouterr()
        assert _cli(tmp_path, esm_dir, *args, *changed, "--resume") == 2
        assert "cannot resume" in capsys.readouterr().err
    assert _cli(tmp_path, esm_dir, *args, "--chain-orders", "2", "--chain-seed", "5", "--resume") == 0
    with pytest.raises(SystemExit):
        _cli(tmp_path, esm_dir, *args[:-1], tmp_path / "c0.jsonl", "--chain-orders", "0")
    assert "--chain-orders: must be a positive integer" in capsys.readouterr().err


def test_evaluate_on_too_few_rows_warns_that_the_intervals_mean_little(esm_dir, reference, tmp_path, capsys):
    path = tmp_path / "two.csv"
    path.write_text("mutant,score\nA4C,1.0\nK2E,2.0\n")
    capsys.readouterr()
    assert (
        _cli(
            tmp_path,
            esm_dir,
            path,
            "--wild-type",
            WT,
            "--out",
            tmp_path / "two.jsonl",
            "--label",
            "score",
            "--evaluate",
            "--methods",
            "masked_marginals",
            "--n-boot",
            "50",
        )
        == 0
    )
    warnings = [x for x in capsys.readouterr().err.splitlines() if x.startswith("warning")]
    assert warnings == [
        "warning: only 2 scored rows with a label: too few for a bootstrap interval (the intervals "
        "shown mean little; use at least 10 rows)"
    ], warnings
