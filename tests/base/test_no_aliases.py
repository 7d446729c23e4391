"""The compatibility names of 0.1.0 are gone (issue 36, item 5; CHANGELOG.md): importing one fails, a
removed flag or value is refused where it is given, and no module keeps a name it marks as a former one."""

import re
from pathlib import Path

import pytest

import mlmprob
from mlmprob.cli import main
from mlmprob.errors import MLMProbError

SRC = Path(mlmprob.__file__).resolve().parent


@pytest.mark.parametrize(
    "module, name",
    [
        ("mlmprob.joints.spec", "JointsConfig"),
        ("mlmprob.joints.job", "JointsConfig"),
        ("mlmprob.joints", "JointsConfig"),
        ("mlmprob.likelihood.records", "CHAIN_FIELDS"),
        ("mlmprob.likelihood.records", "DEFAULT_ORDERS"),
        ("mlmprob.likelihood.records", "chain_columns"),
        ("mlmprob.variants.chain", "DEFAULT_ORDERS"),
    ],
)
def test_a_removed_name_does_not_import(module, name):
    with pytest.raises(ImportError):
        exec(f"from {module} import {name}", {})


def test_the_joints_job_holds_its_spec_under_one_name(tmp_path):
    from mlmprob.joints.job import JointsJob
    from mlmprob.joints.spec import JointsSpec
    from mlmprob.models.spec import ModelSpec

    spec, given = JointsSpec(), dict(model_spec=ModelSpec("m"), data=str(tmp_path / "x.txt"))
    job = JointsJob(spec, **given)
    assert job.spec is spec and JointsJob(spec=spec, **given) == job and not hasattr(job, "config")
    with pytest.raises(TypeError, match="config"):
        JointsJob(config=spec, **given)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["score", "x.txt", "--likelihood", "chain"], "argument --likelihood: invalid choice: 'chain'"),
        (["sample", "--seq", "ACD", "--cdr3"], "unrecognized arguments: --cdr3"),
        (["sample", "--seq", "ACD", "--cdr3", "kabat"], "unrecognized arguments: --cdr3 kabat"),
    ],
)
def test_a_removed_flag_or_value_is_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_the_score_spec_refuses_chain_and_stores_loglik():
    from mlmprob.scoring import ScoreSpec

    with pytest.raises(MLMProbError, match="likelihood must be one of 'pll', 'loglik', got 'chain'"):
        ScoreSpec(likelihood="chain")
    assert ScoreSpec(likelihood="loglik").recorded()["likelihood"] == "loglik"


def test_no_module_keeps_a_name_marked_as_a_former_one():
    marked = re.compile(
        r"the former name|former spelling|former value|the older spelling|alias of --|"
        r"\bJointsConfig\b|--cdr3\b",
        re.IGNORECASE,
    )
    found = [
        f"{p.relative_to(SRC)}:{n}"
        for p in sorted(SRC.rglob("*.py"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if marked.search(line)
    ]
    assert not found, found
