"""The chain-rule likelihood's spec (``LoglikSpec``): ``mlmprob.loglik`` and ``loglik_columns`` take it, its fields
overridden by keyword, with the same values; ``ScoreSpec.loglik_spec`` is the part of the scoring spec they take."""

import dataclasses

import pytest
import torch

from mlmprob import ExactMLM, loglik
from mlmprob.errors import MLMProbError
from mlmprob.likelihood import LoglikSpec
from mlmprob.likelihood.records import loglik_columns, record_generator
from mlmprob.runtime.seeds import seeded_generator
from mlmprob.scoring import ScoreSpec


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(order="best"), "order must be one of 'random', 'l2r', 'r2l', got 'best'"),
        (dict(n_orders=0), "n_orders must be a positive integer, got 0"),
        (dict(seed=-1), "seed must be a non-negative integer, got -1"),
    ],
)
def test_bad_settings_are_refused_with_the_scoring_specs_messages(kw, message):
    for make in (LoglikSpec, ScoreSpec):
        with pytest.raises(MLMProbError, match=message):
            make(**kw)
    with pytest.raises(MLMProbError, match=message):
        LoglikSpec().replace(**kw)


def test_the_scoring_spec_holds_the_likelihood_spec_field_by_field():
    s = ScoreSpec(likelihood="loglik", order="r2l", n_orders=3, per_order=True, seed=7, whole_word=True)
    assert s.loglik_spec == LoglikSpec(order="r2l", n_orders=3, per_order=True, seed=7)
    names = [f.name for f in dataclasses.fields(LoglikSpec)]
    assert names == ["order", "n_orders", "per_order", "seed"] and set(names) <= {f.name for f in dataclasses.fields(s)}
    assert ScoreSpec().loglik_spec == LoglikSpec()  # the defaults agree (8 random orders, seed 0)


def _joint():
    return ExactMLM(torch.randn(2, 2, 2, 2, 2, generator=torch.Generator().manual_seed(0)))


def test_loglik_takes_a_spec_instead_of_order_and_n_orders():
    m, ids = _joint(), torch.tensor([[0, 1, 1, 0, 1], [1, 1, 0, 0, 0]])
    spec = LoglikSpec(order="random", n_orders=3, seed=5)
    r = loglik(m, ids, spec=spec)
    want = loglik(m, ids, order="random", n_orders=3, generator=seeded_generator(5, "stream", "loglik"))
    assert torch.equal(r.orders, want.orders) and torch.equal(r.per_order, want.per_order)
    assert tuple(r.orders.shape) == (2, 3, 5) and not r.exact.any()  # 120 orders a row: 3 drawn
    assert torch.equal(loglik(m, ids, spec=spec).orders, r.orders)  # seeded by the spec: the same again
    assert not torch.equal(loglik(m, ids, spec=spec.replace(seed=6)).orders, r.orders)
    given = torch.Generator().manual_seed(1)
    assert torch.equal(
        loglik(m, ids, None, spec, generator=given).orders,
        loglik(m, ids, order="random", n_orders=3, generator=torch.Generator().manual_seed(1)).orders,
    )
    assert torch.allclose(r.per_order, m.log_prob(ids)[:, None].expand(2, 3))  # exact conditionals: the joint
    l2r = loglik(m, ids, spec=LoglikSpec(order="l2r"))
    assert l2r.orders.tolist() == loglik(m, ids, order="l2r").orders.tolist() == [[[0, 1, 2, 3, 4]]] * 2
    # no spec: the spec's defaults (8 random orders seeded by 0), the keyword form's too
    assert torch.equal(loglik(m, ids).orders, loglik(m, ids, spec=LoglikSpec()).orders)
    assert loglik(m, ids).orders.shape[1] == 8


def test_loglik_keywords_override_the_spec_and_another_spec_is_refused():
    m, ids = _joint(), torch.zeros(1, 5, dtype=torch.long)
    assert torch.equal(
        loglik(m, ids, spec=LoglikSpec(), n_orders=2).orders, loglik(m, ids, spec=LoglikSpec(n_orders=2)).orders
    )
    assert loglik(m, ids, spec=LoglikSpec(n_orders=3), order="l2r").orders.tolist() == [[[0, 1, 2, 3, 4]]]
    with pytest.raises(MLMProbError, match="unknown setting 'orders' of LoglikSpec; the settings are order, n_orders"):
        loglik(m, ids, orders=2)
    with pytest.raises(MLMProbError, match=r"spec must be a LoglikSpec \(a ScoreSpec's is spec.loglik_spec\)"):
        loglik(m, ids, spec=ScoreSpec(likelihood="loglik"))


def test_loglik_columns_takes_the_spec_or_its_fields(tiny_bert, one_thread):
    seq = "ACDEFGHIK"
    spec = LoglikSpec(n_orders=3, per_order=True, seed=4)
    cols = loglik_columns(tiny_bert, seq, spec)
    want = loglik(
        tiny_bert, tiny_bert.encode([seq]).input_ids, order="random", n_orders=3, generator=record_generator(4, seq)
    )
    assert cols["loglik_per_order"] == want.per_order[0].tolist() and cols["loglik_orders"] == 3
    assert cols == loglik_columns(tiny_bert, seq, n_orders=3, per_order=True, seed=4)  # the keyword form
    assert cols == loglik_columns(tiny_bert, seq, LoglikSpec(seed=4), n_orders=3, per_order=True)  # keywords change it
    assert "loglik_per_order" not in loglik_columns(tiny_bert, seq, spec.replace(per_order=False))
    with pytest.raises(MLMProbError, match="n_orders must be a positive integer"):
        loglik_columns(tiny_bert, seq, n_orders=0)
    with pytest.raises(MLMProbError, match="spec must be a LoglikSpec"):
        loglik_columns(tiny_bert, seq, ScoreSpec(likelihood="loglik"))
