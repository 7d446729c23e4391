"""The sampler's one settings object: validated once, the same run whichever way it is given, the same
settings written for every method, and the one epoch loop shared by ``sample`` and the app."""

import argparse
import dataclasses

import pytest
import torch

from mlmprob import ExactMLM, sample
from mlmprob.errors import MLMProbError
from mlmprob.sampling import LinearAnneal
from mlmprob.sampling.api import Chains
from mlmprob.sampling.spec import METHODS, SamplerSpec, method_of


def _model():
    return ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))


@pytest.mark.parametrize("method", METHODS)
def test_a_spec_and_its_keywords_give_the_same_run(method):
    m, ids = _model(), torch.zeros(4, 3, dtype=torch.long)
    takes = method_of(method).spec.__dataclass_fields__  # the options of this method (energies: draws scored)
    kw = dict(method=method, epochs=3, burn_in=1, order="l2r" if method != "mh" else "random", energies=True)
    kw = {k: v for k, v in kw.items() if k in takes}
    a = sample(m, ids, SamplerSpec(**kw), generator=torch.Generator().manual_seed(5))
    b = sample(m, ids, generator=torch.Generator().manual_seed(5), **kw)
    c = sample(
        m,
        ids,
        SamplerSpec(method=method, epochs=1),
        generator=torch.Generator().manual_seed(5),
        **{k: v for k, v in kw.items() if k != "method"},
    )
    for other in (b, c):
        assert torch.equal(a.samples, other.samples) and torch.equal(a.energy_local, other.energy_local)


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(method="hmc"), "method must be one of"),
        (dict(energy="free"), "energy must be 'local' or 'raw'"),
        (dict(epochs=0), "epochs must be a positive integer"),
        (dict(burn_in=-1), "burn_in must be a non-negative integer"),
        (dict(epochs=2, thin=3), r"thin must be an integer in 1\.\.epochs \(2\)"),
        (dict(tokens_per_step=2), "tokens_per_step is for method='ancestral'"),
        (dict(method="ancestral", draft_k=2), "draft_k is for method='speculative'"),
        (dict(init="warm"), "init must be one of"),
        (dict(top_p=0.0), "top_p must lie in"),
        (dict(proposal_temperature=-1.0), "proposal_temperature"),
        (dict(target_temperature=0.0), "target_temperature must be finite and > 0"),
        (dict(anneal=-0.1), "anneal must be"),
        (dict(anneal=0.1, target_temperature=LinearAnneal(1.0, 0.1)), "anneal with a number"),
        (dict(anneal=0.1, temperature_floor=0.0), "floor"),
        (dict(block_size=("cosine", 4, 1)), "block_size must be"),
        (dict(block_size=0), "block sizes|block_size"),
    ],
)
def test_bad_settings_are_refused_where_the_spec_is_made(kw, message):
    with pytest.raises(MLMProbError, match=message):
        SamplerSpec(**kw)


def test_settings_keep_the_order_and_keys_of_the_stored_rows():
    s = SamplerSpec(epochs=20, burn_in=5, block_size=("linear", 4, 1), anneal=0.02)
    assert list(s.settings(chains=4, seed=0)) == [
        "method",
        "energy",
        "chains",
        "epochs",
        "burn_in",
        "thin",
        "block_size",
        "proposal_temperature",
        "top_p",
        "target_temperature",
        "anneal",
        "temperature_floor",
        "order",
        "init",
        "score_all",
        "seed",
    ]
    assert s.settings()["block_size"] == "4:1" and s.settings()["target_temperature"] == 1.0
    assert SamplerSpec(method="ancestral").settings()["tokens_per_step"] == 1
    assert SamplerSpec(method="speculative").settings()["draft_k"] == 4
    assert "tokens_per_step" not in SamplerSpec(method="speculative").settings()
    # the run file: no epochs (a finished run resumes to more), schedules in their stable text form
    cfg = s.run_config(_model())
    assert "epochs" not in cfg and cfg["block_size"] == "LinearBlockSize(start=4, end=1, epochs=25)"
    assert cfg["target_temperature"] == "LinearAnneal(start=1.0, rate=0.02, floor=0.05)"


def test_from_args_takes_every_field_the_parser_has():
    from mlmprob.commands.sampler_args import sampler_spec

    spec = SamplerSpec(method="speculative", epochs=7, draft_k=3, order="r2l", top_p=0.9)
    args = argparse.Namespace(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}, chains=2, model="x")
    assert sampler_spec(args) == spec


def test_the_cli_has_a_flag_for_every_field():
    from mlmprob.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["sample"]
    dests = {a.dest for a in sub._actions}
    assert {f.name for f in dataclasses.fields(SamplerSpec)} <= dests


def test_chains_is_the_loop_of_sample_and_yields_each_epoch():
    m, ids = _model(), torch.zeros(3, 3, dtype=torch.long)
    spec = SamplerSpec(method="gibbs", epochs=3, burn_in=0)
    free = torch.ones(3, 3, dtype=torch.bool)
    with Chains(m, spec, ids, free, torch.Generator().manual_seed(1)) as run:
        recs = list(run.epochs())
    ref = sample(m, ids, spec, generator=torch.Generator().manual_seed(1))
    assert [r.epoch for r in recs] == [0, 1, 2]
    assert torch.equal(torch.tensor(recs[-1].ids), ref.final_ids)
    assert torch.allclose(torch.tensor([r.e_local for r in recs], dtype=torch.float64), ref.energy_local)


def test_on_epoch_sees_every_epoch_with_the_total():
    seen = []
    sample(
        _model(),
        torch.zeros(2, 3, dtype=torch.long),
        epochs=3,
        burn_in=1,
        generator=torch.Generator().manual_seed(0),
        on_epoch=lambda rec, total: seen.append((rec.epoch, total)),
    )
    assert seen == [(0, 4), (1, 4), (2, 4), (3, 4)]


def test_no_sampling_function_takes_a_file_path_or_a_progress_flag():
    """The spine: the CLI and the runtime open files and draw progress; the sampling package takes a spec, a
    reader, a generator and injected writers (``RunFile``) and callbacks (``on_epoch``)."""
    import ast
    from pathlib import Path

    import mlmprob.sampling as pkg

    banned = {"jsonl", "path", "out", "out_dir", "progress", "computed_with"}
    found = []
    for f in sorted(Path(pkg.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("__"):
                args = node.args.args + node.args.kwonlyargs
                found += [f"{f.name}:{node.name}({a.arg})" for a in args if a.arg in banned]
    # the writers the CLI calls or injects (io.py's run files, plots.py's figures) take a path; nothing else does
    assert [x for x in found if not x.startswith(("io.py:", "plots.py:"))] == []
    assert "api.py" not in "".join(found)


def _pairs():
    """Every (method, option it does not take) pair of the registry, with a value valid for a method that does."""
    from mlmprob.sampling.spec import REGISTRY, option_names

    for name, takers in option_names().items():
        value = REGISTRY[takers[0]].spec.__dataclass_fields__[name].default
        for method in REGISTRY:
            if method not in takers:
                yield method, name, value, takers


@pytest.mark.parametrize("method, name, value, takers", list(_pairs()))
def test_an_option_a_method_does_not_take_is_refused_in_python_and_the_cli(method, name, value, takers, capsys):
    """``SamplerSpec(method="ancestral", anneal=0.1)``-style: refused in one line naming the methods that take it,
    at its default value too; the CLI words it with flags, before any model loads."""
    from mlmprob.cli import main
    from mlmprob.sampling.spec import NotForMethod

    with pytest.raises(NotForMethod, match=f"{name} is for method=") as e:
        SamplerSpec(method=method, **{name: value})
    assert e.value.takers == takers and "\n" not in str(e.value)
    with pytest.raises(MLMProbError, match=f"{name} is for method="):
        sample(_model(), torch.zeros(1, 3, dtype=torch.long), method=method, **{name: value})
    meta = SamplerSpec(method=takers[0]).__dataclass_fields__[name].metadata
    flag = "--" + name.replace("_", "-")
    given = [flag] if meta.get("action") == "store_true" else [flag, str(value if name != "block_size" else 1)]
    if value is None:  # a flag whose default is 'not given': any valid value (the field's example, else 2)
        given = [flag, meta.get("example", "2")]
    assert main(["sample", "--seq", "ACD", "--method", method, *given, "--out", "/nonexistent/x"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{flag} does not apply to --method {method}" in err and len(err.splitlines()) == 1


def test_unknown_keywords_are_refused_naming_the_valid_ones():
    with pytest.raises(MLMProbError, match="unknown sampler option 'epoch'; method='gibbs' takes: .*epochs"):
        SamplerSpec(method="gibbs", epoch=3)
    with pytest.raises(MLMProbError, match="unknown sampler option 'temperature'"):
        sample(_model(), torch.zeros(1, 3, dtype=torch.long), temperature=0.5)


def test_every_field_has_a_flag_and_every_flag_a_field():
    """The sampler flags of ``mlmprob sample`` are made from the registry's spec fields: none missing, none extra
    (``--chains`` and ``--seed`` are the job's)."""
    from mlmprob.cli import build_parser
    from mlmprob.commands.sampler_args import JOB_FLAGS
    from mlmprob.sampling.spec import option_names

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["sample"]
    groups = [g for g in sub._action_groups if g.title == "sampler" or g.title.startswith("--method ")]
    flags = {a.dest for g in groups for a in g._group_actions}
    assert flags == set(option_names()) | set(JOB_FLAGS)
    for a in (a for g in groups for a in g._group_actions):
        assert a.help and a.option_strings == ["--" + a.dest.replace("_", "-")]


def test_a_method_switch_keeps_the_settings_given():
    s = SamplerSpec(method="mh", epochs=3, top_p=0.9)
    t = s.replace(method="ancestral")
    assert (type(t).__name__, t.epochs, t.top_p, t.burn_in) == ("AncestralSpec", 3, 0.9, 0)
    with pytest.raises(MLMProbError, match="anneal is for method='mh'"):
        SamplerSpec(method="mh", anneal=0.1).replace(method="gibbs")
