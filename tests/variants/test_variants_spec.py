"""The variants spec: validated once where it is made, the same scores given as a spec or as keywords, the
configuration keys the runs stored before, and a CLI flag for every field."""

import argparse
import dataclasses

import pytest
import torch

from mlmprob import ExactMLM
from mlmprob.errors import MLMProbError
from mlmprob.variants import VariantsSpec, score_variants
from mlmprob.variants.spec import DEFAULT_METHODS, SATURATE_METHODS


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(methods=("bogus",)), "unknown variant scoring method 'bogus'"),
        (dict(methods=()), "unknown variant scoring method None"),
        (dict(offset=1.5), "offset must be an integer, got 1.5"),
        (dict(chain_orders=0), "n_orders must be a positive integer, got 0"),
        (dict(chain_seed=-1), "chain_seed must be a non-negative integer, got -1"),
    ],
)
def test_bad_settings_are_refused_where_the_spec_is_made(kw, message):
    with pytest.raises(MLMProbError, match=message) as e:
        VariantsSpec(**kw)
    assert "\n" not in str(e.value)


def test_methods_are_a_tuple_without_repeats_and_chain_settings_only_with_chain():
    assert VariantsSpec(methods=["hcb", "hcb", "ag"]).methods == ("hcb", "ag")
    assert VariantsSpec(methods="hcb").methods == ("hcb",)
    assert list(VariantsSpec(methods=("chain",), chain_seed=2).settings()) == [
        "methods",
        "offset",
        "chain_orders",
        "chain_seed",
    ]
    assert VariantsSpec(methods=None).methods[0] == "wt_marginals"


def test_a_spec_and_its_keywords_give_the_same_scores():
    m = ExactMLM(torch.randn(3, 3, 3, 3, generator=torch.Generator().manual_seed(0)))
    wt, muts = torch.tensor([0, 1, 2, 0]), [[(0, 1), (2, 0), (3, 2)], [(1, 2)]]
    spec = VariantsSpec(methods=("hcb", "chain"), chain_orders=2, chain_seed=3)
    a = score_variants(m, wt, muts, spec)
    b = score_variants(m, wt, muts, methods=["hcb", "chain"], chain_orders=2, chain_seed=3)
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    c = score_variants(m, wt, muts, spec, chain_seed=1)  # keywords override the spec's fields
    assert all(torch.equal(c[k], score_variants(m, wt, muts, spec.replace(chain_seed=1))[k]) for k in c)
    with pytest.raises(MLMProbError, match="unknown setting 'seed' of VariantsSpec; the settings are methods, offset"):
        score_variants(m, wt, muts, spec, seed=1)
    with pytest.raises(MLMProbError, match="spec must be a VariantsSpec, got list"):
        score_variants(m, wt, muts, ["hcb"])


def test_the_command_reads_the_comma_list_and_the_defaults_of_each_mode(capsys):
    from mlmprob.cli import build_parser
    from mlmprob.commands.variants import variants_spec

    ns = dict(methods=None, offset=1, chain_orders=6, chain_seed=0, saturate=False)
    assert variants_spec(argparse.Namespace(**ns)).methods == DEFAULT_METHODS
    assert variants_spec(argparse.Namespace(**{**ns, "saturate": True})).methods == SATURATE_METHODS
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["variants"]
    spec = variants_spec(sub.parse_args(["x.csv", "--wild-type", "MK", "--methods", " hcb, chain ,", "--offset", "0"]))
    assert spec == VariantsSpec(methods=("hcb", "chain"), offset=0)  # the flag reads the comma list
    for text, why in ((",", "must name one or more methods"), ("hcb,nosuch", "unknown variant scoring method")):
        with pytest.raises(SystemExit):
            sub.parse_args(["x.csv", "--wild-type", "MK", "--methods", text])
        assert f"argument --methods: {why}" in capsys.readouterr().err


def test_the_cli_has_a_flag_for_every_field():
    from mlmprob.cli import build_parser
    from mlmprob.commands.variants import variants_spec

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["variants"]
    assert {f.name for f in dataclasses.fields(VariantsSpec)} <= {a.dest for a in sub._actions}
    assert variants_spec(sub.parse_args(["x.csv", "--wild-type", "MK"])) == VariantsSpec()
