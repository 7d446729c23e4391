"""The chain-rule likelihood in the app: the Score tab's column and ``chain`` in the mutant box."""

import pytest

from mlmprob import load_mlm, loglik
from mlmprob.app.compute import APP_ORDERS, APP_SCORE, mutant_scores, score_text
from mlmprob.errors import MLMProbError
from mlmprob.likelihood.records import record_generator


@pytest.fixture(scope="module")
def mlm(tiny_bert_dir, one_thread):
    return load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")


def test_score_tab_has_the_chain_loglik(mlm):
    res = score_text(mlm, ">a\nACDEFGH\n>b\nKLM")
    for seq, _row, c in zip(["ACDEFGH", "KLM"], res.rows, res.chain, strict=True):
        want = loglik(
            mlm, mlm.encode([seq]).input_ids, order="random", n_orders=APP_ORDERS, generator=record_generator(0, seq)
        ).mixture[0]
        assert c == pytest.approx(float(want), abs=1e-9)
    t = res.table()
    assert t[1][5] == round(res.chain[1], 4) and t[1][6] == round(res.chain[1] / 3, 4)
    assert res.csv().splitlines()[0].startswith("id,n_tokens,pll,pll_per_token,e_raw,loglik_mixture,loglik_per_token")


def test_score_tab_runs_a_scoring_spec(mlm):
    assert APP_SCORE.loglik_spec.n_orders == APP_ORDERS and APP_SCORE.per_token
    res = score_text(mlm, ">a\nACDEFGH", spec=APP_SCORE.replace(seed=2, n_orders=3))
    want = loglik(
        mlm, mlm.encode(["ACDEFGH"]).input_ids, order="random", n_orders=3, generator=record_generator(2, "ACDEFGH")
    ).mixture[0]
    assert res.chain[0] == pytest.approx(float(want), abs=1e-9) and res.rows[0].tokens
    with pytest.raises(MLMProbError, match="per_token=True and likelihood='loglik'"):
        score_text(mlm, "ACD", spec=APP_SCORE.replace(likelihood="pll"))


def test_mutant_box_has_chain(mlm):
    single = mutant_scores(mlm, "ACDEFGHIK", "C2W")
    assert single.scores["chain"] == pytest.approx(single.scores["masked_marginals"], abs=1e-12)
    double = mutant_scores(mlm, "ACDEFGHIK", "C2W:K9A")
    assert set(double.scores) >= {"hcb", "pll_delta", "epistasis", "chain"}
