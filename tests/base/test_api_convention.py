"""One API convention (issue 36, item 1): every algorithm's entry point is ``f(mlm, inputs..., spec=None,
**overrides)``. The spec class is the only source of defaults (no keyword of the signature is a field with another
default), keywords override its fields by name (the same result as the spec with that field), and an unknown
keyword is refused in one line naming the valid ones. (The samplers' ``sample`` has its own tests.)"""

import dataclasses
import inspect

import pytest
import torch

import mlmprob
from mlmprob import ExactMLM
from mlmprob.energies import EnergySpec, TokenScoresSpec
from mlmprob.errors import MLMProbError
from mlmprob.infilling import InfillSpec
from mlmprob.joints import PairJointSpec, PairSpec
from mlmprob.joints.job import JointsSpec, run_joints
from mlmprob.likelihood import LoglikSpec
from mlmprob.onepass import OnePassSpec, PLLSpec, one_pass_token_scores
from mlmprob.onepass.correction import Correction
from mlmprob.runtime.command import RunOptions
from mlmprob.variants.spec import VariantsSpec

# (name, the entry point, its spec class)
ENTRY_POINTS = [
    ("token_scores", mlmprob.token_scores, TokenScoresSpec),
    ("energies.pll", mlmprob.energies.pll, TokenScoresSpec),
    ("energy", mlmprob.energy, EnergySpec),
    ("pll", mlmprob.pll, PLLSpec),
    ("one_pass_token_scores", one_pass_token_scores, OnePassSpec),
    ("loglik", mlmprob.loglik, LoglikSpec),
    ("infill", mlmprob.infill, InfillSpec),
    ("score_variants", mlmprob.score_variants, VariantsSpec),
    ("pairwise_joint", mlmprob.pairwise_joint, PairJointSpec),
    ("evaluate_pair", mlmprob.evaluate_pair, PairSpec),
    ("run_joints", run_joints, JointsSpec),
]
IDS = [e[0] for e in ENTRY_POINTS]


def _inputs(name):
    """Positional inputs (after ``mlm``) that are never read: an unknown keyword is refused first."""
    return {
        "infill": (None, None),
        "score_variants": (None, None),
        "pairwise_joint": (None, 0, 1),
        "evaluate_pair": (None, 0, 1),
        "run_joints": ("never-read", RunOptions("never-written")),
    }.get(name, (None,))


@pytest.mark.parametrize("name, f, spec_class", ENTRY_POINTS, ids=IDS)
def test_the_signature_takes_a_spec_and_overrides_and_no_default_of_its_own(name, f, spec_class):
    params = inspect.signature(f).parameters
    assert "spec" in params and params["spec"].default is None, name
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()), name
    fields = {fl.name: fl for fl in dataclasses.fields(spec_class)}
    for p in params.values():
        if p.name in fields and p.default is not inspect.Parameter.empty:
            assert p.default == fields[p.name].default, f"{name}: {p.name}={p.default!r} differs from the spec's"
    assert not set(params) & set(fields), f"{name} names spec fields as keywords: {set(params) & set(fields)}"


@pytest.mark.parametrize("name, f, spec_class", ENTRY_POINTS, ids=IDS)
def test_an_unknown_keyword_is_refused_naming_the_valid_ones(name, f, spec_class):
    with pytest.raises(MLMProbError) as e:
        f(None, *_inputs(name), bogus_setting=1)
    text = str(e.value)
    assert "\n" not in text and f"unknown setting 'bogus_setting' of {spec_class.__name__}" in text, text
    names = [fl.name for fl in dataclasses.fields(spec_class)]
    assert text.endswith(f"the settings are {', '.join(names)}" if names else "it has none"), text


def load_test_module(rel):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("_joints_tests", Path(__file__).resolve().parents[1] / rel)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _exact():
    return ExactMLM(torch.randn(3, 3, 3, 3, generator=torch.Generator().manual_seed(0)))


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


OVERRIDES = [
    # (name, call(f, mlm, spec=..., **kw) -> comparable, the model, a base spec, the field and its value)
    ("energy", lambda f, m, **kw: f(m, torch.tensor([[0, 1, 2, 0]]), **kw), "exact", EnergySpec(), "kind", "raw"),
    (
        "loglik",
        lambda f, m, **kw: f(m, torch.tensor([[0, 1, 2, 0]]), **kw).per_order,
        "exact",
        LoglikSpec(),
        "n_orders",
        3,
    ),
    (
        "loglik",
        lambda f, m, **kw: f(m, torch.tensor([[0, 1, 2, 0]]), **kw).orders,
        "exact",
        LoglikSpec(n_orders=2),
        "order",
        "r2l",
    ),
    (
        "infill",
        lambda f, m, **kw: f(m, [0, 3, 3, 0], [1, 2], **kw),
        "exact",
        InfillSpec(method="standard"),
        "beam_size",
        2,
    ),
    ("infill", lambda f, m, **kw: f(m, [0, 3, 3, 0], [1, 2], **kw), "exact", InfillSpec(pivot="1"), "pivot", "2"),
    (
        "score_variants",
        lambda f, m, **kw: f(m, torch.tensor([0, 1, 2, 0]), [[(0, 1), (2, 0), (3, 2)], [(1, 2)]], **kw),
        "exact",
        VariantsSpec(),
        "methods",
        ("hcb", "chain"),
    ),
    (
        "pairwise_joint",
        lambda f, m, **kw: f(m, torch.tensor([0, 1, 2, 0]), 1, 2, **kw),
        "exact",
        PairJointSpec(),
        "method",
        "mrf",
    ),
    (
        "evaluate_pair",
        lambda f, m, **kw: f(m, torch.tensor([0, 1, 2, 0]), 1, 2, **kw).joints,
        "exact",
        PairSpec(pivot=(0, 0)),
        "ag_steps",
        3,
    ),
    ("pll", lambda f, m, **kw: f(m, m.encode(["ACDE"]).input_ids, **kw), "bert", PLLSpec(), "method", "unmasked"),
    (
        "one_pass_token_scores",
        lambda f, m, **kw: f(m, m.encode(["ACDE"]).input_ids, **kw).log_prob,
        "bert",
        OnePassSpec(correction=Correction.identity(32)),  # tiny_bert's hidden size
        "correction",
        Correction(torch.zeros(32, 32), torch.zeros(32, 32), torch.full((32,), 0.5)),
    ),
]


@pytest.mark.parametrize("name, call, model, base, field, value", OVERRIDES, ids=[f"{o[0]}-{o[4]}" for o in OVERRIDES])
def test_a_keyword_overrides_the_field_of_that_name(name, call, model, base, field, value, tiny_bert):
    f = dict((e[0], e[1]) for e in ENTRY_POINTS)[name]
    m = _exact() if model == "exact" else tiny_bert
    want = call(f, m, spec=base.replace(**{field: value}))
    assert _same(call(f, m, spec=base, **{field: value}), want)  # the spec, its field overridden
    if base == type(base)():  # no spec: the class's defaults, the field overridden
        assert _same(call(f, m, **{field: value}), want)
    assert not _same(call(f, m, spec=base), want)  # the override did change something


def test_the_joints_runner_takes_its_spec_by_keyword_and_its_run_as_one_object(tmp_path):
    tiny_bert_mlm = load_test_module("joints/test_joints.py").tiny_bert_mlm

    m = tiny_bert_mlm()
    data = tmp_path / "seqs.txt"
    data.write_text("ACDEFGH\nCDEA\n")
    spec = JointsSpec(n_pairs=1, top_k=3)

    def drop_time(records):
        return [{k: v for k, v in r.items() if not k.startswith("seconds")} for r in records]

    a = run_joints(m, data, RunOptions(str(tmp_path / "a")), spec, seed=4)
    b = run_joints(m, data, RunOptions(str(tmp_path / "b")), spec.replace(seed=4))
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
    c = run_joints(m, data, RunOptions(str(tmp_path / "c")), **{**fields, "seed": 4})
    assert drop_time(a) == drop_time(b) == drop_time(c) and len(a) == 2
    with pytest.raises(MLMProbError, match="needs model_spec= .* or a loaded model"):
        run_joints(None, data, RunOptions(str(tmp_path / "d")))
    with pytest.raises(MLMProbError, match="run must be a RunOptions"):
        run_joints(m, data, str(tmp_path / "e"), spec)
