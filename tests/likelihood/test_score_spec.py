"""The scoring spec (``mlmprob score``: PLL, whole-word, per-token, the chain-rule likelihood, one-pass): validated
once where it is made with the messages the CLI printed, the configuration keys the runs stored before, and a CLI
flag for every field."""

import argparse
import dataclasses

import pytest

from mlmprob.errors import MLMProbError
from mlmprob.models.spec import ModelSpec
from mlmprob.onepass.job import OnePassScoreJob
from mlmprob.scoring import ScoreJob, ScoreSpec


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(likelihood="exact"), "likelihood must be one of 'pll', 'loglik', got 'exact'"),
        (dict(order="best"), "order must be one of 'random', 'l2r', 'r2l'"),
        (dict(n_orders=0), "n_orders must be a positive integer, got 0"),
        (dict(seed=-1), "seed must be a non-negative integer"),
        (dict(pll="fast"), "pll must be one of 'exact', 'one-pass'"),
        (dict(correction="c.safetensors"), "--correction is the one-pass correction: use it with --pll one-pass"),
        (dict(pll="one-pass", per_token=True), r"--pll one-pass gives per-sequence scores only \(no --per-token"),
        (dict(pll="one-pass", likelihood="loglik"), "--pll one-pass and --likelihood loglik cannot be combined"),
    ],
)
def test_bad_settings_are_refused_where_the_spec_is_made(kw, message):
    with pytest.raises(MLMProbError, match=message) as e:
        ScoreSpec(**kw)
    assert "\n" not in str(e.value)


def test_the_stored_configuration_keeps_its_keys_order_and_stores_loglik():
    assert ScoreSpec(per_order=True, n_orders=3).recorded() == {"whole_word": False, "per_token": False}
    loglik = ScoreSpec(likelihood="loglik", order="l2r", n_orders=3, per_order=True, seed=2, whole_word=True)
    assert list(loglik.recorded().items()) == [
        ("whole_word", True),
        ("per_token", False),
        ("likelihood", "loglik"),
        ("order", "l2r"),
        ("n_orders", 3),
        ("per_order", True),
        ("seed", 2),
    ]
    with pytest.raises(MLMProbError, match="likelihood must be one of 'pll', 'loglik', got 'chain'"):
        ScoreSpec(likelihood="chain")  # the former spelling is gone
    assert list(ScoreSpec().settings()) == ["whole_word", "per_token", "likelihood", "pll"]
    assert ScoreSpec(pll="one-pass", correction="c").settings()["correction"] == "c"


def test_each_job_takes_the_specs_it_runs():
    assert OnePassScoreJob(model_spec=ModelSpec("m")).spec.one_pass
    with pytest.raises(MLMProbError, match="OnePassScoreJob"):
        ScoreJob(model_spec=ModelSpec("m"), spec=ScoreSpec(pll="one-pass"))
    with pytest.raises(MLMProbError, match="needs a spec with pll='one-pass'"):
        OnePassScoreJob(model_spec=ModelSpec("m"), spec=ScoreSpec())
    with pytest.raises(MLMProbError, match="spec must be a ScoreSpec"):
        ScoreJob(model_spec=ModelSpec("m"), spec={"whole_word": True})


def test_from_args_and_the_cli_has_a_flag_for_every_field():
    from mlmprob.cli import build_parser
    from mlmprob.commands.common import spec_of

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["score"]
    assert {f.name for f in dataclasses.fields(ScoreSpec)} <= {a.dest for a in sub._actions}
    assert spec_of(ScoreSpec, sub.parse_args(["x.txt"])) == ScoreSpec()
    args = sub.parse_args(["x.txt", "--likelihood", "loglik", "--orders", "3", "--order", "r2l", "--seed", "4"])
    assert spec_of(ScoreSpec, args) == ScoreSpec(likelihood="loglik", n_orders=3, order="r2l", seed=4)
