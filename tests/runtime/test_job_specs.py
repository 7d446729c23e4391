"""One spec per algorithm (issue 29, item 1): every streamed job holds its algorithm's settings as ``spec``, a
frozen :class:`mlmprob.settings.Spec`, and refuses anything else there."""

import dataclasses

import pytest

from mlmprob.errors import MLMProbError
from mlmprob.models.spec import ModelSpec
from mlmprob.settings import Spec


def _jobs(tmp_path):
    from mlmprob.infilling.stream import InfillJob
    from mlmprob.joints.job import JointsJob
    from mlmprob.joints.spec import JointsSpec
    from mlmprob.onepass.job import OnePassScoreJob
    from mlmprob.sampling.stream import SampleJob
    from mlmprob.scoring import ScoreJob
    from mlmprob.variants.stream import VariantsJob

    return [
        ScoreJob(model_spec=ModelSpec("m")),
        OnePassScoreJob(model_spec=ModelSpec("m")),
        SampleJob(model_spec=ModelSpec("m")),
        InfillJob(model_spec=ModelSpec("m")),
        VariantsJob(model_spec=ModelSpec("m"), wild_type="MKT"),
        JointsJob(JointsSpec(), model_spec=ModelSpec("m"), data=str(tmp_path / "x.txt")),
    ]


def test_every_job_holds_a_frozen_spec(tmp_path):
    for job in _jobs(tmp_path):
        assert isinstance(job.spec, Spec), type(job).__name__
        with pytest.raises(dataclasses.FrozenInstanceError):
            job.spec.__setattr__(dataclasses.fields(job.spec)[0].name, None)


@pytest.mark.parametrize("name", ["ScoreJob", "InfillJob", "VariantsJob", "SampleJob"])
def test_a_job_refuses_settings_that_are_not_its_spec(name):
    import importlib

    module = {
        "ScoreJob": "mlmprob.scoring",
        "InfillJob": "mlmprob.infilling.stream",
        "VariantsJob": "mlmprob.variants.stream",
        "SampleJob": "mlmprob.sampling.stream",
    }[name]
    cls = getattr(importlib.import_module(module), name)
    extra = {"wild_type": "MKT"} if name == "VariantsJob" else {}
    with pytest.raises(MLMProbError, match="spec must be a"):
        cls(model_spec=ModelSpec("m"), spec={"method": "x"}, **extra)
