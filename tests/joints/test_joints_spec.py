"""The joints spec: validated once where it is made, the identity a record file stores, made from the CLI's
arguments by field name, and a CLI flag for every field."""

import argparse
import dataclasses

import pytest

from mlmprob.errors import MLMProbError
from mlmprob.joints.job import JointsSpec as JobJointsSpec
from mlmprob.joints.spec import JointsSpec


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(format="xml"), "unknown data format 'xml'"),
        (dict(schemes=("diagonal",)), r"unknown pair scheme\(s\) \['diagonal'\]"),
        (dict(schemes=()), r"unknown pair scheme\(s\) \(none\)"),
        (dict(schemes=("random", "random")), "pair schemes repeat"),
        (dict(n_pairs=0), "n_pairs must be >= 1"),
        (dict(pivot="mean"), "pivot must be 'mode' or 'mask'"),
        (dict(top_k=0), "top_k must be >= 1"),
        (dict(max_sequences=0), "max_sequences must be >= 1"),
    ],
)
def test_bad_settings_are_refused_where_the_spec_is_made(kw, message):
    with pytest.raises(MLMProbError, match=message) as e:
        JointsSpec(**kw)
    assert "\n" not in str(e.value)


def test_identity_keeps_the_stored_keys_and_order():
    spec = JointsSpec(schemes=["contiguous"], n_pairs=3).reading("x.csv")
    assert spec.schemes == ("contiguous",) and JobJointsSpec is JointsSpec
    assert list(spec.recorded()) == [  # after the job's model and data (tests/joints/test_joints.py)
        "column",
        "schemes",
        "seed",
        "top_k",
        "pivot",
        "ag_steps",
        "ag_tol",
        "ag_max_steps",
        "max_sequences",
        "format",
    ]
    assert spec.recorded()["schemes"] == ["contiguous"] and spec.settings()["n_pairs"] == 3


def test_from_args_and_the_cli_has_a_flag_for_every_field():
    from mlmprob.cli import build_parser
    from mlmprob.commands.common import spec_of

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["joints"]
    assert {f.name for f in dataclasses.fields(JointsSpec)} <= {a.dest for a in sub._actions}
    args = sub.parse_args(
        ["--model", "m", "--data", "x.csv", "--out", "o", "--schemes", "random", "--n-pairs", "2", "--ag-steps", "50"]
    )
    assert spec_of(JointsSpec, args) == JointsSpec(schemes=("random",), n_pairs=2, ag_steps=50)
