"""``mlmprob design``: one row per chain with every term's energy and the mutant string; the oracle only behind
--allow-code; bad input in one line; every DesignSpec field has its flag."""

import dataclasses
import json

import pytest

from mlmprob.cli import build_parser, main
from mlmprob.designing import DesignSpec, mutant_string

PARENT = "EVQLVESGGGLVQPGGSLRLS"


def _design_parser():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sub.choices["design"]


def test_every_spec_field_has_its_flag():
    dests = {a.dest for a in _design_parser()._actions}
    missing = [f.name for f in dataclasses.fields(DesignSpec) if f.name not in dests]
    assert missing == []


def test_rows_carry_every_term_and_the_mutations(capsys, tmp_path):
    argv = ["design", PARENT, "--chains", "2", "--steps", "3", "--positions", "3-6", "--max-mutations", "2"]
    argv += ["--forbid", "liabilities", "--oracle", "design_toys:oracle", "--allow-code", "--hamming", "0.5"]
    assert main(argv) == 0
    out = capsys.readouterr()
    rows = [json.loads(line) for line in out.out.splitlines()]
    assert len(rows) == 2 and "acceptance" in out.err
    for r in rows:
        assert {"energy_antiberty", "energy_oracle", "energy_hamming", "total", "mutant", "sequence"} <= set(r)
        assert r["mutant"] == mutant_string(PARENT, r["sequence"]) and r["mutations"] <= 2
        assert r["sequence"][:2] == PARENT[:2] and r["sequence"][6:] == PARENT[6:]
    tsv = tmp_path / "d.tsv"
    assert main([*argv, "--out", str(tsv)]) == 0
    lines = tsv.read_text().splitlines()
    assert lines[0].split("\t")[:4] == ["id", "chain", "temperature", "sequence"] and len(lines) == 3


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--oracle", "design_toys:oracle"], "--oracle imports and runs your code: pass --allow-code"),
        (["--oracle", "design_toys:nope", "--allow-code"], "--oracle design_toys:nope: module 'design_toys' has no"),
        (["--forbid", "N[ST"], "forbid motif 'N[ST' is not a valid regular expression"),
        (["--forbid", "GGG"], "the parent violates a hard constraint: forbidden motif GGG at residue 8"),
        (["--allowed", "3:"], "position 3 has an empty allowed set"),
        (["--temperatures", "1,2"], "temperatures is for method='replica'"),
        (["--method", "replica", "--temperatures", "2,1"], "--temperatures: must increase from the target's"),
        # red-team: a typo'd kind was read as part of the model's name, a nan weight reached the loaded term
        (
            ["--expert", "antiberty:pll:1"],
            "--expert 'antiberty:pll:1': the energy is one of local, raw, mutant_marginal, not 'pll'",
        ),
        (["--expert", "antiberty:pll:nan"], "--expert 'antiberty:pll:nan': the weight must be a finite number"),
        (["--expert", "antiberty:inf"], "--expert 'antiberty:inf': the weight must be a finite number, got 'inf'"),
    ],
)
def test_bad_input_is_one_line(capsys, extra, message):
    try:
        code = main(["design", PARENT, "--steps", "1", *extra])
    except SystemExit as usage:  # refused by the flag itself (argparse's exit 2)
        code = usage.code
    assert code != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_readme_design_example_runs(antiberty, sapiens_vh, monkeypatch):
    """The design guide's block (docs/guides/design.md, the README's once) on the embedded models, one chain per
    temperature and one step. Its ``mlmprob.load_mlm("antiberty")`` and ``("sapiens-vh")`` are answered by the
    session's copies of the same models (conftest), loaded once for every test that reads them."""
    import re
    from pathlib import Path

    import mlmprob

    session = {"antiberty": antiberty, "sapiens-vh": sapiens_vh}
    load = mlmprob.load_mlm

    def load_mlm(name, *args, **kwargs):
        return session[name] if name in session and not args and not kwargs else load(name, *args, **kwargs)

    monkeypatch.setattr(mlmprob, "load_mlm", load_mlm)

    text = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "design.md").read_text()
    section = text[text.index("# Design under constraints") :]
    # the first block after the quick start (tests/docs/test_guides.py runs that one)
    code = next(b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "chains=2, steps=3" in b)
    code = code.replace("chains=2, steps=3", "chains=1, steps=1")
    assert "chains=1, steps=1" in code
    ns: dict = {}
    exec(compile(code, "docs/guides/design.md", "exec"), ns)
    r = ns["r"]
    assert r.names == ("antiberty", "sapiens-vh", "oracle", "hamming") and len(r.rows) == 2
    assert all(row["in_constraints"] and row["mutations"] <= 3 for row in r.rows)
    assert [t["temperature"] for t in r.stats["temperatures"]] == [1.0, 2.0]


def test_the_package_is_the_function_however_it_was_imported():
    import subprocess
    import sys

    code = (
        "import mlmprob.designing.api, mlmprob; print(callable(mlmprob.design), mlmprob.designing.DesignSpec.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["True", "DesignSpec"]
