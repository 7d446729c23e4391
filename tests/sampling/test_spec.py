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
from mlmprob.sampling.spec import METHODS, SamplerSpec


def _model():
    return ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))


@pytest.mark.parametrize("method", METHODS)
def test_a_spec_and_its_keywords_give_the_same_run(method):
    m, ids = _model(), torch.zeros(4, 3, dtype=torch.long)
    kw = dict(method=method, epochs=3, burn_in=1, order="l2r" if method != "mh" else "random")
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
    from mlmprob.commands.common import spec_of

    spec = SamplerSpec(method="speculative", epochs=7, draft_k=3, order="r2l", top_p=0.9)
    args = argparse.Namespace(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}, chains=2, model="x")
    assert spec_of(SamplerSpec, args) == spec


def test_the_cli_has_a_flag_for_every_field():
    from mlmprob.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["sample"]
    dests = {a.dest for a in sub._actions}
    assert {f.name for f in dataclasses.fields(SamplerSpec)} <= dests


def test_chains_is_the_loop_of_sample_and_yields_each_epoch():
    m, ids = _model(), torch.zeros(3, 3, dtype=torch.long)
    spec = SamplerSpec(method="gibbs", epochs=3)
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
