"""The CDR-H3 experiment runner end to end on a tiny random BERT: records, resume, report."""

import json
import math
import statistics

import pytest
from mdtable import row, tables_after

from experiments import cdr_h3
from mlmprob.errors import MLMProbError
from mlmprob.metrics import corpus_bleu, stutter_rate

AA = "ACDEFGHIKLMNPQRSTVWY"
HCS = {  # a short synthetic VH (CDR-H3 "ARDGY"), trastuzumab and pertuzumab
    "short": "QVQLVQSGAEVKKPGASVKVSCKASGYTFTSYGISWVRQAPGQGLEWMGWISAYNGNTNYAQKLQGRVTMTTDTSTSTAYMELRSLRSDDTAVYYCARDGY"
    "WGQGTLVTVSS",
    "tras": "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    "WGGDGFYAMDYWGQGTLVTVSS",
    "pert": "EVQLVESGGGLVQPGGSLRLSCAASGFTFTDYTMDWVRQAPGKGLEWVADVNPNSGGSIYNQRFKGRFTLSVDRSKNTLYLQMNSLRAEDTAVYYCAR"
    "NLGPSFYFDYWGQGTLVTVSS",
}


@pytest.fixture()
def data_csv(tmp_path):
    p = tmp_path / "abs.csv"
    rows = ["Therapeutic,HC", "bad,EVQLXQ", "noCDR,ACDEFGHIKL"] + [f"{k},{v}" for k, v in HCS.items()]
    p.write_text("\n".join(rows) + "\n")
    return p


def test_stutter_and_corpus_bleu_by_hand():
    assert stutter_rate("AAAA") == 1.0 and stutter_rate("ACAC") == 0.0 and math.isnan(stutter_rate("A"))
    # 1-grams 7/8, 2-grams 5/6, 3-grams 3/4, 4-grams 1/2 (counted by hand), equal lengths: no brevity penalty
    assert corpus_bleu(["ABCD", "ABCE"], ["ABCD", "ABCD"]) == pytest.approx((7 / 8 * 5 / 6 * 3 / 4 * 1 / 2) ** 0.25)
    # clipping: "AAAA" vs "ABCD" has one 1-gram match, no 2-gram match -> 0; BLEU-1 is 1/4
    assert corpus_bleu(["AAAA"], ["ABCD"]) == 0.0
    assert corpus_bleu(["AAAA"], ["ABCD"], max_n=1) == pytest.approx(0.25)
    # brevity penalty exp(1 - 4/3) when the hypotheses are shorter
    assert corpus_bleu(["ABC"], ["ABCD"], max_n=1) == pytest.approx(math.exp(1 - 4 / 3))


def test_runner_resumes_and_builds_report(tiny_bert_dir, data_csv, tmp_path, capsys):
    out = tmp_path / "res"
    argv = [
        "--model",
        str(tiny_bert_dir),
        "--out",
        str(out),
        "--data",
        str(data_csv),
        "--tables",
        "3,5,u",
        "--epochs",
        "1",
        "--burn-in",
        "1",
        "--n-antibodies",
        "2",
        "--chains",
        "2",
        "--uncond-length",
        "6",
        "--uncond-chains",
        "2",
    ]
    assert cdr_h3.main(argv) == 0
    lines = (out / "results.jsonl").read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    names = {c for t in ("3", "5", "u") for c in cdr_h3.TABLES[t]}
    assert {r["config"] for r in recs} == names
    n_cond = len([n for n in names if not n.startswith("u/")])
    assert len(recs) == n_cond * 2 * 2 + 4 * 2
    by = {(r["config"], r["unit"], r["chain"]): r for r in recs}
    r = by[("t3/block-mh-local", "tras", 1)]
    assert r["cdr_native"] == "SRWGGDGFYAMDY" and len(r["final"]["cdr"]) == 13
    assert len(r["per_epoch"]["e_local"]) == 2 and r["per_epoch"]["block_size"] == [4, 1]
    assert 0 <= r["post_burn_in"]["accept"] <= 1 and 0 <= r["final"]["identity"] <= 1
    # the framework is clamped: identity of the warm start and of the final design are about CDR-H3 only
    g = by[("t1/gibbs-pt0.8", "tras", 0)]
    assert g["post_burn_in"]["accept"] == 1.0
    w = by[("t5/warm-start", "tras", 0)]
    assert w["final"]["cdr"] == w["start"]["cdr"] == r["start"]["cdr"]
    u = by[("u/mh-local-pt1.0", "all-mask-L6", 0)]
    assert len(u["final"]["cdr"]) == 6 and u["final"]["identity"] is None and 0 <= u["final"]["stutter"] <= 1
    report = (out / "report.md").read_text()
    assert "Table 5 shape" in report and "Table 3 shape" in report and "stutter" in report
    assert "python -m experiments.cdr_h3 --model" in report

    # table cells against the raw records: mean ± standard error (sample s.d. / sqrt(n)) over chains
    def mean_se(vals, digits):
        return f"{statistics.mean(vals):.{digits}f} ± {statistics.stdev(vals) / math.sqrt(len(vals)):.{digits}f}"

    def of(config, where, key):
        return [r[where][key] for r in recs if r["config"] == config]

    (t3,) = tables_after(report, "Table 3 shape")
    assert row(t3, **{"": "acceptance"})["Norm (local)"] == mean_se(
        of("t3/block-mh-local", "post_burn_in", "accept"), 3
    )
    assert row(t3, **{"": "E_raw (post)"})["Raw"] == mean_se(of("t3/block-mh-raw", "post_burn_in", "e_raw"), 2)
    assert row(t3, **{"": "chains"})["Deg"] == "4"
    (t5,) = tables_after(report, "Table 5 shape")
    assert row(t5, **{"": "Warm-start"})["E_local ↓ (final)"].startswith(
        f"{statistics.mean(of('t5/warm-start', 'final', 'e_local')):.2f} ± "
    )
    assert (out / "fig4_block.png").exists() and (out / "fig1_samplers.png").exists() is False
    assert not (out / "work").exists()

    # a second run computes nothing new
    capsys.readouterr()
    assert cdr_h3.main(argv) == 0
    assert (out / "results.jsonl").read_text().splitlines() == lines
    assert "records in" not in capsys.readouterr().out
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert runs[-1]["event"] == "finish" and runs[-1]["written"] == {}

    # other settings on the same folder: a clear error, nothing written
    assert cdr_h3.main(argv[: argv.index("--epochs")] + ["--epochs", "2"] + argv[argv.index("--epochs") + 2 :]) == 2
    assert "written with epochs=1; this run has epochs=2" in capsys.readouterr().err
    # the report reads the folder's settings, whatever the command line says
    (out / "report.md").unlink()
    assert cdr_h3.main(["--model", "unused", "--out", str(out), "--report-only"]) == 0
    assert "1 burn-in + 1 epochs = 2 sweeps" in (out / "report.md").read_text()


def test_partial_units_and_errors(tiny_bert_dir, data_csv, tmp_path):
    out = tmp_path / "res"
    base = [
        "--model",
        str(tiny_bert_dir),
        "--out",
        str(out),
        "--data",
        str(data_csv),
        "--epochs",
        "1",
        "--burn-in",
        "0",
        "--chains",
        "1",
        "--only",
        "t1/gibbs-pt1.0",
        "--no-report",
    ]
    assert cdr_h3.main(base + ["--n-antibodies", "1"]) == 0
    assert cdr_h3.main(base + ["--n-antibodies", "3"]) == 0  # only the two new antibodies run
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["unit"] for r in recs] == ["short", "tras", "pert"]
    with pytest.raises(MLMProbError, match="only 3 heavy chains"):
        cdr_h3.load_antibodies(data_csv, 4)
    with pytest.raises(MLMProbError, match="unknown table"):
        cdr_h3.select_configs(["9"])


def test_ancestral_configurations_and_table6(tiny_bert_dir, data_csv, tmp_path):
    import torch

    from experiments.cdr_h3_tables import RecordsByConfig, diversity
    from mlmprob import loglik
    from mlmprob.models import load_mlm

    out = tmp_path / "res"
    argv = [
        "--model",
        str(tiny_bert_dir),
        "--out",
        str(out),
        "--data",
        str(data_csv),
        "--tables",
        "6",
        "--epochs",
        "2",
        "--burn-in",
        "1",
        "--n-antibodies",
        "2",
        "--chains",
        "2",
    ]
    assert cdr_h3.main(argv) == 0
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert {r["config"] for r in recs} == set(cdr_h3.TABLES["6"])
    anc = [r for r in recs if r["config"] == "t6/ancestral-l2r"]
    assert len(anc) == 4
    assert all(r["settings"]["order"] == "l2r" and r["settings"]["method"] == "ancestral" for r in anc)
    assert [r["settings"]["order"] for r in recs if r["config"] == "t6/ancestral-random"] == ["random"] * 4
    # no accept step; log p_sigma per epoch, its post-burn-in mean; each draw's log p is loglik along l2r
    mlm = load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")
    abs_ = {a.name: a for a in cdr_h3.load_antibodies(data_csv, 2)}
    for r in anc:
        pe = r["per_epoch"]
        assert r["post_burn_in"]["accept"] is None and r["post_burn_in"]["novel"] is None
        assert len(pe["log_prob"]) == 3
        assert r["post_burn_in"]["log_prob"] == pytest.approx(statistics.mean(pe["log_prob"][1:]))
        a = abs_[r["unit"]]
        enc = mlm.encode([" ".join(a.hc[: a.start] + cdr + a.hc[a.end :]) for cdr in pe["cdr"]])
        free = (enc.word_ids >= a.start) & (enc.word_ids < a.end)
        want = loglik(mlm, enc.input_ids, free, order="l2r").per_order[:, 0]
        assert torch.allclose(torch.tensor(pe["log_prob"], dtype=torch.float64), want, atol=1e-4)
    report = (out / "report.md").read_text()
    (t6,) = tables_after(report, "Ancestral sampling vs MH")
    lp = [r["post_burn_in"]["log_prob"] for r in anc]
    assert (
        row(t6, **{"": "log p_sigma of the draw (post)"})["ancestral l2r"]
        == f"{statistics.mean(lp):.2f} ± {statistics.stdev(lp) / math.sqrt(len(lp)):.2f}"
    )
    assert row(t6, **{"": "novel rate"})["ancestral random order"] == "—"
    assert row(t6, **{"": "chains"})["MH-local (T=1.0)"] == "4"
    assert row(t6, **{"": "pairwise distance between chains (post)"})["Warm start"] == "0.000 ± 0.000"
    # diversity by hand: two antibodies; chains at the same epoch compared position by position
    fake = [
        {"config": "c", "unit": u, "chain": c, "final": {"cdr": d[-1]}, "per_epoch": {"cdr": d, "e_local": [0] * 3}}
        for u, c, d in [
            ("a", 0, ["XX", "AAAA", "AAAA"]),
            ("a", 1, ["XX", "AAAB", "AABB"]),
            ("b", 0, ["XX", "CC", "CC"]),
            ("b", 1, ["XX", "CC", "CC"]),
        ]
    ]
    # a: distances 1/4 and 2/4 -> 0.375, distinct 3 of 4; b: 0, distinct 1 of 4 -> mean 0.1875, 0.5
    assert diversity(RecordsByConfig(fake), "c", 1) == ("0.188 ± 0.188", "0.500 ± 0.250")
