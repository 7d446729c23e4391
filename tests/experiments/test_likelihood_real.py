"""The real-model chain-rule likelihood experiment (issue 20, part 5): its bound, perplexities, records,
resume and report, on a tiny random-weight model and a fake data folder."""

import itertools
import math

import pytest
import torch

import mlmprob
from experiments import likelihood_real as lr
from experiments.likelihood_real_report import corpus_ppl, mixture_bound, summarize
from mlmprob.errors import MLMProbError
from mlmprob.runtime.log import read_log
from tests.conftest import tiny_hf


@pytest.fixture(scope="module")
def model():
    return tiny_hf("bert", seed=3)


def test_mixture_bound_is_the_log_mean_and_rises_with_k():
    g = torch.Generator().manual_seed(0)
    lp = (torch.randn(16, generator=g, dtype=torch.float64) * 2).tolist()
    full = math.log(sum(math.exp(x) for x in lp) / 16)
    assert mixture_bound(lp, 16) == pytest.approx(full, abs=1e-12)
    assert mixture_bound(lp, 1) == pytest.approx(sum(lp) / 16, abs=1e-12)
    bounds = [mixture_bound(lp, k) for k in (1, 2, 4, 8, 16)]
    assert all(a <= b + 1e-12 for a, b in zip(bounds, bounds[1:]))  # Jensen per group, nested groups
    assert bounds[0] < bounds[-1]


def test_corpus_ppl_and_its_interval():
    ll = torch.tensor([-10.0, -30.0, -20.0, -25.0], dtype=torch.float64)
    n = torch.tensor([5.0, 10.0, 10.0, 10.0], dtype=torch.float64)
    ppl, lo, hi = corpus_ppl(ll, n)
    assert ppl == pytest.approx(math.exp(85 / 35))
    assert lo <= ppl <= hi and lo < hi
    assert math.isnan(corpus_ppl(ll[:1], n[:1])[1])


@pytest.mark.parametrize("bad", ["x:thera_heavy:2", "m:nope:2:4", "m:thera_heavy:0:4", "m:thera_heavy:a:4"])
def test_bad_stage_is_one_clear_error(bad):
    with pytest.raises(MLMProbError, match="stage"):
        lr.parse_stage(bad)


def test_score_sequence_matches_the_api(model):
    seq = "ACDEFGHIK"
    rec = lr.score_sequence(model, seq, k_max=6, seed=1)
    ids = model.encode([seq]).input_ids
    assert rec["n_tokens"] == 9 and len(rec["per_order"]) == 6
    assert rec["pll"] == pytest.approx(float(mlmprob.pll(model, ids)[0]), abs=1e-9)
    assert rec["l2r"] == pytest.approx(float(mlmprob.loglik(model, ids, order="l2r").per_order[0, 0]), abs=1e-9)
    assert rec["r2l"] == pytest.approx(float(mlmprob.loglik(model, ids, order="r2l").per_order[0, 0]), abs=1e-9)
    assert rec == {**lr.score_sequence(model, seq, k_max=6, seed=1), "seconds": rec["seconds"]}  # seeded by the record
    assert rec["per_order"] != lr.score_sequence(model, seq, k_max=6, seed=2)["per_order"]


def test_every_order_of_a_short_sequence_gives_an_exact_mixture(model):
    rec = lr.score_sequence(model, "ACD", k_max=6, seed=0)  # 3! = 6 orders: all of them
    assert rec["exact"] and len(rec["per_order"]) == 6
    ids = model.encode(["ACD"]).input_ids
    orders = [list(p) for p in itertools.permutations([1, 2, 3])]
    brute = mlmprob.loglik(model, ids, order=orders).per_order[0]
    assert sorted(rec["per_order"]) == pytest.approx(sorted(brute.tolist()), abs=1e-5)


def _data(tmp_path):
    d = tmp_path / "data"
    (d / "antibody").mkdir(parents=True)
    rows = ["HC,LC"] + [
        f"{a},{b}"
        for a, b in [("ACDEFG", "GHIK"), ("KLACDE", "CDEF"), ("GGHHKK", "X1"), ("ACDEFG", "LLKK"), ("DEFGHI", "AAAC")]
    ]
    (d / "antibody" / "thera_sabdab.csv").write_text("\n".join(rows) + "\n")
    return d


def test_run_resumes_extends_and_reports(tmp_path, model, monkeypatch):
    monkeypatch.setattr("mlmprob.models.loading.load_mlm", lambda name, dtype=None: model)
    data, out = _data(tmp_path), tmp_path / "out"
    assert lr.load_set(data, "thera_heavy") == ["ACDEFG", "KLACDE", "GGHHKK", "DEFGHI"]  # distinct, in order
    assert lr.load_set(data, "thera_light") == ["GHIK", "CDEF", "LLKK", "AAAC"]  # X1 is not a protein
    st = lr.parse_stage("tiny:thera_heavy:2:4")
    assert lr.run([st], out, data, log=lambda m: None) == 2
    assert lr.run([st], out, data, log=lambda m: None) == 0  # exactly once
    assert lr.run([lr.parse_stage("tiny:thera_heavy:3:4")], out, data, log=lambda m: None) == 1  # extends
    recs = list(read_log(out / "results.jsonl"))
    assert [r["sequence"] for r in recs] == lr.sample_set(lr.load_set(data, "thera_heavy"), 3)
    with pytest.raises(MLMProbError, match="seed"):
        lr.run([st], out, data, seed=5, log=lambda m: None)  # a changed run is refused
    c = summarize(recs)
    assert c["seqs"] == 3 and c["k_max"] == 4 and c["mix1"][0] >= c["mix4"][0]  # more orders: a tighter bound
    from experiments.likelihood_real_report import write_report

    text = write_report(out).read_text()
    assert "| tiny | thera_heavy | 3 |" in text and "pseudo-ppl" in text and (out / "fig_orders.png").stat().st_size > 0


def test_main_without_data_is_one_clear_line(tmp_path, capsys):
    assert (
        lr.main(["--out", str(tmp_path / "o"), "--data", str(tmp_path / "none"), "--plan", "tiny:thera_heavy:1:1"]) != 0
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "--data" in err[0]


def test_report_only_without_results_is_one_clear_line(tmp_path, capsys):
    assert lr.main(["--out", str(tmp_path / "nothing"), "--report-only"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "results.jsonl not found" in err[0]
