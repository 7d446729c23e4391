"""The infilling spec: validated once where it is made, the same fills given as a spec or as keywords, the
settings the rows stored before, and a CLI flag for every field."""

import argparse
import dataclasses

import pytest
import torch

from mlmprob import ExactMLM
from mlmprob.errors import MLMProbError
from mlmprob.infilling import InfillSpec, infill


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(method="greedy"), "unknown infilling method 'greedy'"),
        (dict(order="r2l"), "unknown order 'r2l'"),
        (dict(beam_size=0), "beam_size must be a positive integer, got 0"),
        (dict(beam_size=True), "beam_size must be a positive integer"),
        (dict(method="standard", pivot="A"), r"pivot is used only by method='hcb'"),
        (dict(pivot=1.5), "pivot must be a token, a token id or None"),
    ],
)
def test_bad_settings_are_refused_where_the_spec_is_made(kw, message):
    with pytest.raises(MLMProbError, match=message) as e:
        InfillSpec(**kw)
    assert "\n" not in str(e.value)


def test_settings_keep_the_order_and_keys_of_the_stored_rows():
    assert InfillSpec().settings() == {"method": "hcb", "order": "l2r", "beam_size": 5, "pivot": "mask"}
    assert list(InfillSpec(pivot=3).settings().items()) == [
        ("method", "hcb"),
        ("order", "l2r"),
        ("beam_size", 5),
        ("pivot", "3"),
    ]
    assert InfillSpec().replace(order="best").order == "best"


def test_a_spec_and_its_keywords_give_the_same_fills():
    m = ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))
    ids = [m.mask_id] * 3
    for method, pivot in (("standard", None), ("hcb", 1)):  # ExactMLM has no output for the mask: a token pivot
        for order in ("l2r", "best"):
            a = infill(m, ids, [0, 2], InfillSpec(method=method, order=order, beam_size=3, pivot=pivot))
            b = infill(m, ids, [0, 2], method=method, order=order, beam_size=3, pivot=pivot)
            assert [(c.tokens, c.score) for c in a] == [(c.tokens, c.score) for c in b]
    a = infill(m, ids, [0, 1], InfillSpec(pivot="2", beam_size=2))  # a pivot id written as text
    b = infill(m, ids, [0, 1], method="hcb", pivot=2, beam_size=2)
    assert [(c.tokens, c.score) for c in a] == [(c.tokens, c.score) for c in b]
    spec = InfillSpec(method="standard")  # keywords override the spec's fields
    assert infill(m, ids, [0], spec, beam_size=2) == infill(m, ids, [0], spec.replace(beam_size=2))
    with pytest.raises(MLMProbError, match="unknown setting 'beam' of InfillSpec; the settings are method, order"):
        infill(m, ids, [0], spec, beam=2)


def test_from_args_and_the_cli_has_a_flag_for_every_field():
    from mlmprob.cli import build_parser
    from mlmprob.commands.common import spec_of

    spec = InfillSpec(method="hcb", order="best", beam_size=2, pivot="A")
    args = argparse.Namespace(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}, model="x")
    assert spec_of(InfillSpec, args) == spec
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["infill"]
    assert {f.name for f in dataclasses.fields(InfillSpec)} <= {a.dest for a in sub._actions}
    defaults = sub.parse_args(["X_"])
    assert spec_of(InfillSpec, defaults) == InfillSpec()  # the CLI's defaults are the spec's
