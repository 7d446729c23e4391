"""Ranking metrics (mlmprob.metrics.ranking) on hand-computed cases, and the bootstrap intervals, single and paired."""

import math

import pytest
import torch

from mlmprob.errors import MLMProbError
from mlmprob.metrics.ranking import (
    PairedBootstrap,
    auroc,
    auroc_within,
    bootstrap,
    evaluate,
    ndcg,
    rank_average,
    spearman,
    top_recall,
)

t = torch.tensor


def test_spearman_by_hand():
    assert float(spearman(t([1.0, 2, 3, 4]), t([1.0, 3, 2, 4]))) == pytest.approx(1 - 6 * 2 / (4 * 15))
    # ties: ranks (1.5, 1.5, 3) vs (1, 2, 3): cov 1.5, variances 1.5 and 2
    assert float(spearman(t([1.0, 1, 2]), t([1.0, 2, 3]))) == pytest.approx(1.5 / math.sqrt(1.5 * 2))
    assert float(spearman(t([4.0, 3, 2, 1]), t([1.0, 2, 3, 4]))) == pytest.approx(-1)
    assert math.isnan(float(spearman(t([1.0, 1, 1]), t([1.0, 2, 3]))))
    batched = spearman(t([[1.0, 2, 3, 4], [4.0, 3, 2, 1]]), t([[1.0, 3, 2, 4], [1.0, 3, 2, 4]]))
    assert batched.tolist() == pytest.approx([0.8, -0.8])
    assert rank_average(t([[2.0, 2, 2], [5.0, 1, 5]])).tolist() == [[2, 2, 2], [2.5, 1, 2.5]]


def test_auroc_by_hand():
    assert float(auroc(t([0.1, 0.4, 0.35, 0.8]), t([0, 0, 1, 1]))) == 0.75
    # pairs (pos, neg): (3,1) win, (3,2) win, (3,3) tie, (2,1) win, (2,2) tie, (2,3) loss -> (3 + 2 * 0.5) / 6
    assert float(auroc(t([1.0, 2, 3, 2, 3, 1]), t([0, 0, 0, 1, 1, 0]))) == pytest.approx(
        (sum(1.0 if p > q else 0.5 if p == q else 0.0 for p in (2.0, 3.0) for q in (1.0, 2.0, 3.0, 1.0))) / 8
    )
    assert float(auroc(t([3.0, 2, 1]), t([1, 0, 0]))) == 1.0
    assert float(auroc(t([1.0, 1]), t([0, 1]))) == 0.5
    assert math.isnan(float(auroc(t([1.0, 2]), t([1, 1]))))


def test_ndcg_by_hand():
    target = torch.arange(20.0)  # gains i / 19; k = 2
    pred = torch.zeros(20)
    pred[19], pred[10] = 2.0, 1.0  # predicted best: 19, then 10
    dcg = 1.0 + (10 / 19) / math.log2(3)
    idcg = 1.0 + (18 / 19) / math.log2(3)
    assert float(ndcg(pred, target)) == pytest.approx(dcg / idcg)
    assert float(ndcg(pred, target, top=0.05)) == pytest.approx(1.0)  # k = 1
    # gains are min-max scaled: a shift or scale of the targets changes nothing
    assert float(ndcg(pred, 3 * target - 7)) == pytest.approx(dcg / idcg)
    assert math.isnan(float(ndcg(pred, torch.ones(20))))
    # k = 1 on 10 points: the best prediction has target 5 of 0..9
    assert float(ndcg(-(torch.arange(10.0) - 5).abs(), torch.arange(10.0))) == pytest.approx(5 / 9)


def test_top_recall_by_hand():
    target = torch.arange(1.0, 21.0)  # 0.9 quantile = 1 + 0.9 * 19 = 18.1: the top set is {19, 20}
    pred = -torch.arange(20.0)
    pred[19], pred[4] = 100.0, 99.0  # predicted top: targets {20, 5}
    assert float(top_recall(pred, target)) == 0.5
    assert float(top_recall(target, target)) == 1.0
    assert float(top_recall(-target, target)) == 0.0
    assert float(top_recall(pred, target, top=0.25)) == pytest.approx(1 / 5)  # top {16..20}; predicted {20, 5, 3, 2, 1}


def test_bootstrap_interval_of_a_mean_matches_the_normal_approximation():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, generator=g, dtype=torch.float64)
    mean = lambda p, _: p.mean(-1)  # noqa: E731
    e = bootstrap(mean, x, x, generator=torch.Generator().manual_seed(1), n_boot=4000)
    half = 1.96 * float(x.std(unbiased=False)) / math.sqrt(len(x))
    assert e.value == pytest.approx(float(x.mean()))
    # the percentile interval is value +- 1.96 sd / sqrt(n) up to resampling noise (~3% at 4000 resamples)
    assert (e.high - e.low) / 2 == pytest.approx(half, rel=0.08)
    assert (e.high + e.low) / 2 == pytest.approx(e.value, abs=0.1 * half)
    assert e.n == 400 and e.n_boot == 4000
    again = bootstrap(mean, x, x, generator=torch.Generator().manual_seed(1), n_boot=4000)
    assert (again.low, again.high) == (e.low, e.high)


def test_bootstrap_of_a_perfect_ranking_and_undefined_resamples():
    e = bootstrap(
        spearman, torch.arange(30.0), torch.arange(30.0) ** 3, generator=torch.Generator().manual_seed(0), n_boot=300
    )
    assert (e.value, e.low, e.high) == (1.0, 1.0, 1.0)
    # 3 points: some resamples repeat one point and have no defined correlation; they are left out
    e = bootstrap(spearman, t([1.0, 2, 3]), t([1.0, 2, 3]), generator=torch.Generator().manual_seed(0), n_boot=500)
    assert 0 < e.n_boot < 500 and e.low == 1.0


def test_evaluate_and_its_errors():
    g = torch.Generator().manual_seed(0)
    target = torch.randn(200, generator=g, dtype=torch.float64)
    pred = target + torch.randn(200, generator=g, dtype=torch.float64)
    labels = (target > 0).long()
    res = evaluate(pred, target, labels=labels, generator=torch.Generator().manual_seed(3), n_boot=200)
    assert set(res) == {"spearman", "ndcg", "top_recall", "auroc"}
    for k, e in res.items():
        assert e.low <= e.value <= e.high, k
    assert float(spearman(pred, target)) == res["spearman"].value and 0.5 < res["spearman"].value < 0.9
    assert res["auroc"].value == float(auroc(pred, labels))
    with pytest.raises(MLMProbError, match="1 of 200 points are NaN"):
        evaluate(torch.where(torch.arange(200) == 7, float("nan"), pred), target, generator=g)
    with pytest.raises(MLMProbError, match="same length"):
        evaluate(pred[:5], target, generator=g)
    with pytest.raises(MLMProbError, match="labels must be 0 or 1"):
        evaluate(pred, target, labels=labels * 2, generator=g)
    with pytest.raises(MLMProbError, match="both labels"):
        evaluate(pred, target, labels=torch.ones(200), generator=g)
    with pytest.raises(MLMProbError, match="n_boot"):
        bootstrap(spearman, pred, target, generator=g, n_boot=0)


def test_evaluate_uses_the_same_resamples_for_every_metric():
    g = torch.Generator().manual_seed(5)
    target = torch.randn(60, generator=g, dtype=torch.float64)
    pred = target + torch.randn(60, generator=g, dtype=torch.float64)
    labels = (target > 0.3).long()
    gen = torch.Generator().manual_seed(9)
    res = evaluate(pred, target, labels=labels, generator=gen, n_boot=100)
    for name, fn, y in [
        ("spearman", spearman, target),
        ("auroc", auroc, labels),
        ("top_recall", lambda p, q: top_recall(p, q, 0.1), target),
    ]:
        alone = bootstrap(fn, pred, y, generator=torch.Generator().manual_seed(9), n_boot=100)
        assert (alone.low, alone.high) == (res[name].low, res[name].high), name
    # the caller's generator moved on by exactly one bootstrap
    ref = torch.Generator().manual_seed(9)
    bootstrap(spearman, pred, target, generator=ref, n_boot=100)
    assert torch.equal(gen.get_state(), ref.get_state())
    only = evaluate(pred, labels=labels, generator=torch.Generator().manual_seed(9), n_boot=100)
    assert list(only) == ["auroc"] and only["auroc"] == res["auroc"]
    with pytest.raises(MLMProbError, match="target values, 0/1 labels, or both"):
        evaluate(pred, generator=gen)


def test_auroc_within_strata_matches_pair_count():
    g = torch.Generator().manual_seed(3)
    n = 200
    k = torch.randint(1, 6, (n,), generator=g)
    y = torch.randint(0, 2, (n,), generator=g)
    p = torch.randint(0, 5, (n,), generator=g).double()  # many ties
    num = den = 0.0
    for kk in k.unique():
        a, b = p[(k == kk) & (y == 1)][:, None], p[(k == kk) & (y == 0)][None, :]
        num += float(((a > b).double() + 0.5 * (a == b).double()).sum())
        den += a.numel() * b.numel()
    t = (y + 2 * k).double()
    assert float(auroc_within(p, t)) == pytest.approx(num / den, abs=1e-12)
    assert float(auroc_within(-k.double(), t)) == pytest.approx(0.5)  # counting mutations adds nothing
    idx = torch.randint(n, (4, n), generator=g)  # batched = one at a time
    assert torch.allclose(auroc_within(p[idx], t[idx]), torch.stack([auroc_within(p[i], t[i]) for i in idx]))


def test_paired_bootstrap_is_the_single_bootstrap_on_the_same_resamples():
    g = torch.Generator().manual_seed(5)
    y = torch.randn(40, generator=g, dtype=torch.float64)
    a = y + torch.randn(40, generator=g, dtype=torch.float64)
    b = y + 2 * torch.randn(40, generator=g, dtype=torch.float64)
    pb = PairedBootstrap(spearman, {"a": a, "b": b}, y, n_boot=300, generator=torch.Generator().manual_seed(1))
    single = bootstrap(spearman, a, y, generator=torch.Generator().manual_seed(1), n_boot=300)
    assert pb.estimate("a") == single
    d = pb.difference("a", "b")
    assert d.value == pytest.approx(float(spearman(a, y) - spearman(b, y)), abs=1e-15)
    # the difference's interval comes from the paired resamples, not from the two intervals
    want = torch.quantile(pb.boots["a"] - pb.boots["b"], torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    assert [d.low, d.high] == pytest.approx(want, abs=1e-15)
    assert d.above_zero == (d.low > 0) and d.below_zero == (d.high < 0)
    with pytest.raises(MLMProbError, match="at least 2"):
        PairedBootstrap(spearman, {"a": a[:1]}, y[:1], n_boot=10, generator=g)
