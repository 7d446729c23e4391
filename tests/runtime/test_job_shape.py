"""One job shape (issue 29, item 2): every streamed job of the package, found by walking the source, derives
from ``ModelJob``, loads its model through the one loading block (``ModelSpec.load``: ``load_mlm``, then the
budget on the reader), returns a ``runtime.job.State`` holding the reader, and pickles (the worker pool and
Ray send it to other processes)."""

from __future__ import annotations

import ast
import importlib
import pickle
from pathlib import Path

import pytest

import mlmprob
from mlmprob.models import Reader
from mlmprob.models.forward import DEFAULT_BATCH_TOKENS
from mlmprob.models.spec import ModelJob, ModelSpec
from mlmprob.runtime.job import State

SRC = Path(mlmprob.__file__).resolve().parent
SHAPE = {"mlmprob.runtime.job.Job", "mlmprob.models.spec.ModelJob"}  # the shape itself: the protocol, the base


def job_classes() -> dict[str, type]:
    """Every class named ``*Job`` in ``src/mlmprob`` but the shape's own, by its qualified name, imported."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Job"):
                module = ".".join(("mlmprob",) + path.relative_to(SRC).with_suffix("").parts)
                if f"{module}.{node.name}" in SHAPE:
                    continue
                found[f"{module}.{node.name}"] = getattr(importlib.import_module(module), node.name)
    return found


def _joints_config(tmp_path):
    from mlmprob.joints.job import JointsSpec

    data = tmp_path / "seqs.txt"
    data.write_text("ACDEFGH\nCDEAKLM\n")
    return {"spec": JointsSpec(n_pairs=1), "data": str(data)}


# a job's own required arguments (the four loading fields are given to all): a new job class must be added
JOB_ARGS = {
    "mlmprob.scoring.ScoreJob": lambda tmp: {},
    "mlmprob.onepass.job.OnePassScoreJob": lambda tmp: {},
    "mlmprob.sampling.stream.SampleJob": lambda tmp: {},
    "mlmprob.sampling.folder.FolderSampleJob": lambda tmp: {"folder": str(tmp)},
    "mlmprob.infilling.stream.InfillJob": lambda tmp: {},
    "mlmprob.variants.stream.VariantsJob": lambda tmp: {"wild_type": "MKTAYIAKQ"},
    "mlmprob.joints.job.JointsJob": _joints_config,
    "mlmprob.designing.job.DesignJob": lambda tmp: {"parent": "MKTAYIAKQ"},
}


def test_the_walk_finds_every_job_and_each_is_a_model_job():
    found = job_classes()
    assert len(found) >= 6
    assert set(found) == set(JOB_ARGS), "a job class was added or moved: list its arguments in JOB_ARGS"
    for name, cls in found.items():
        assert issubclass(cls, ModelJob), name
        # the one loading block: no job writes its own load
        assert cls.load is ModelJob.load and cls.__dataclass_fields__["model_spec"].type == "ModelSpec", name


@pytest.mark.parametrize("name", sorted(JOB_ARGS))
@pytest.mark.parametrize("batch_tokens", [None, 96])
def test_each_job_loads_through_the_one_block_and_pickles(name, batch_tokens, esm, tmp_path, monkeypatch):
    import mlmprob.models as models

    cls = job_classes()[name]
    extra = JOB_ARGS[name](tmp_path)
    model = "some/model"
    job = cls(model_spec=ModelSpec(model, "float32", True, batch_tokens), **extra)
    assert job.model_spec == ModelSpec(model, "float32", True, batch_tokens)

    again = pickle.loads(pickle.dumps(job))
    assert again == job and type(again) is cls

    calls = []

    def fake_load_mlm(name_or_path, **kw):
        calls.append((name_or_path, kw))
        return esm

    monkeypatch.setattr(models, "load_mlm", fake_load_mlm)
    state = again.load("cpu")
    assert calls == [(model, {"device": "cpu", "dtype": "float32", "allow_pickle": True})]
    assert isinstance(state, State) and isinstance(state.mlm, Reader)
    assert state.mlm.batch_tokens == (batch_tokens or DEFAULT_BATCH_TOKENS)  # the reader carries the budget
    assert type(job).prepare(job, esm).mlm.batch_tokens == state.mlm.batch_tokens  # library use: the same state


def test_the_jobs_hold_their_model_spec(tmp_path):
    """A job holds its model as one ``ModelSpec`` (issue 51: not a copy of its fields), which the CLI and the library
    build; a joints job's too (its spec holds settings only)."""
    from mlmprob.joints.job import JointsJob
    from mlmprob.sampling.stream import SampleJob
    from mlmprob.scoring import ScoreJob, ScoreSpec

    spec = ModelSpec("x", None)
    assert ScoreJob(model_spec=spec, spec=ScoreSpec(whole_word=True)).model_spec == ModelSpec("x", None)
    assert SampleJob(model_spec=ModelSpec("x", batch_tokens=8), chains=2).model_spec.batch_tokens == 8
    assert JointsJob(model_spec=ModelSpec("m", None), **_joints_config(tmp_path)).model_spec.dtype is None
    assert JointsJob(model_spec=spec, **_joints_config(tmp_path)).model_spec is spec  # not the settings


def test_the_runner_refuses_a_state_that_is_not_one(tmp_path):
    from mlmprob.runtime.job import state_of

    with pytest.raises(TypeError, match="returned Reader, not a runtime.job.State"):
        state_of(object(), object.__new__(Reader))
    s = State(None)
    assert state_of(object(), s) is s


def test_a_job_of_several_models_loads_each_once_through_the_block(esm, monkeypatch):
    """A design reads several experts: ``extra_model_specs`` are loaded by the same block, on the same device, in
    order, once per worker; the jobs of one model load one."""
    import mlmprob.models as models
    from mlmprob.designing.job import DesignJob

    calls = []
    monkeypatch.setattr(models, "load_mlm", lambda name, **kw: calls.append((name, kw["device"])) or esm)
    job = DesignJob(
        model_spec=ModelSpec("a", batch_tokens=96), experts=(("a", "local", 1.0), ("b", "raw", 0.5)), parent="MKTAYIAKQ"
    )
    state = pickle.loads(pickle.dumps(job)).load("cpu")
    assert calls == [("a", "cpu"), ("b", "cpu")]
    assert state.target.names == ("a", "b") and state.mlm.batch_tokens == 96
    one = [c for n, c in job_classes().items() if not n.endswith("DesignJob")]
    assert all(c.extra_model_specs is ModelJob.extra_model_specs for c in one)  # the jobs of one model: none
    with pytest.raises(ValueError, match="is not model"):
        DesignJob(model_spec=ModelSpec("x"), experts=(("a", "local", 1.0),))
