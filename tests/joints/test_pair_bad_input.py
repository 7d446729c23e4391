"""Red-team, second round: ``pairwise_joint`` / ``evaluate_pair`` given what a notebook passes by mistake: one line
naming the argument before any forward pass, never torch's message, never a joint of a [CLS] slot."""

import pytest
from conftest import tiny_hf

from mlmprob import MLMProbError, evaluate_pair, pairwise_joint
from mlmprob.errors import PositionsError
from mlmprob.joints.constructions import PairJointSpec
from mlmprob.joints.evaluate import PairSpec


@pytest.fixture(scope="module")
def bert():
    return tiny_hf("bert")


@pytest.fixture(scope="module")
def row(bert):
    return bert.encode(["ACDEF"]).input_ids[0]  # [CLS] A C D E F [SEP]


@pytest.mark.parametrize("a, b", [(0, 2), (2, 6), (-1, 2)])
def test_a_special_position_is_refused(bert, row, a, b):
    # it gave a normalised joint over the residues "at" [CLS] / [SEP]
    with pytest.raises(PositionsError, match="holds the special token .* a pair needs residue positions"):
        pairwise_joint(bert, row, a, b)
    with pytest.raises(PositionsError, match="holds the special token"):
        evaluate_pair(bert, row, a, b)


@pytest.mark.parametrize("a", [2.5, 2.0, "2", None, True])
def test_a_position_that_is_not_an_int_is_refused(bert, row, a):
    # 2.5 was read as 2, "2" as 2, None was int()'s TypeError
    with pytest.raises(PositionsError, match="a must be a token index"):
        pairwise_joint(bert, row, a, 3)


@pytest.mark.parametrize("pivot", [5, "AA", "mode", (1, 2, 3), (1.5, 2)])
def test_a_pivot_that_is_not_a_pair_of_ids_is_refused_by_the_specs(pivot):
    with pytest.raises(MLMProbError, match="pivot must be a pair of token ids"):
        PairJointSpec(method="hcb", pivot=pivot)
    with pytest.raises(MLMProbError, match="pivot must be a pair of token ids"):
        PairSpec(pivot=pivot)


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(top_k=1.5), "top_k must be None"),
        (dict(top_k=float("nan")), "top_k must be None"),
        (dict(top_k="3"), "top_k must be None"),
        (dict(ag_steps="x"), "ag_steps must be None"),
        (dict(ag_steps=-1), "ag_steps must be None"),
        (dict(ag_steps=10**12), "ag_steps must be at most"),
        (dict(ag_tol=float("nan")), "ag_tol must be a finite number"),
        (dict(ag_tol=-1.0), "ag_tol must be a finite number"),
        (dict(ag_tol="x"), "ag_tol must be a finite number"),
        (dict(ag_max_steps=0), "ag_max_steps must be an integer >= 1"),
        (dict(ag_max_steps=None), "ag_max_steps must be an integer >= 1"),
    ],
)
def test_pair_spec_validates_its_fields_once(bert, row, bad, message):
    # top_k=1.5 was torch's topk() TypeError; ag_tol=nan / -1 ran silently to ag_max_steps
    with pytest.raises(MLMProbError, match=message):
        PairSpec(**bad)
    calls = []
    spy = type("Spy", (), {"__getattr__": lambda s, n: calls.append(n) or getattr(bert, n)})()
    with pytest.raises(MLMProbError, match=message):
        evaluate_pair(spy, row, 2, 3, **bad)
    assert "logits" not in calls and "logits_at" not in calls  # refused before any forward pass


def test_good_settings_still_run(bert, row):
    assert PairSpec(top_k=3, pivot=[4, 5], ag_steps=0, ag_tol=0.0).pivot == (4, 5)
    assert pairwise_joint(bert, row, 2, 3).shape == (10, 10)
    assert evaluate_pair(bert, row, 1, 5, top_k=3, ag_steps=2).ag.steps == 2
