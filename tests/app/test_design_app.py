"""The Sample tab's design section (mlmprob.app.designer) without gradio: experts chosen among the app's model and
others with weights, constraints, the parent; the rows are ``mlmprob design``'s for the same seed, every row obeys
the constraints, the changed residues are highlighted; bad input in one line."""

import json
import re

import pytest
from conftest import save_tiny_bert

from mlmprob import MLMProbError, load_mlm
from mlmprob.app import Limits
from mlmprob.app.designer import (
    ExpertPool,
    design_headers,
    design_html,
    design_rows,
    design_spec,
    design_summary,
    design_view,
)
from mlmprob.cli import main
from mlmprob.designing import mutant_string

PARENT = "EVQLVESGGGLVNGS"  # an N-glycosylation motif (NGS) at 13: tolerated where it is, never a new one


@pytest.fixture(scope="module")
def folders(tiny_bert_dir, tmp_path_factory):
    return tiny_bert_dir, save_tiny_bert(tmp_path_factory.mktemp("second"), 0.3)


@pytest.fixture(scope="module")
def pool(folders, one_thread):
    first, second = folders
    loaded = []

    def loader(name):
        loaded.append(name)
        return load_mlm(str(second), device="cpu")

    p = ExpertPool(load_mlm(str(first), device="cpu"), "tiny", loader=loader)
    p.loaded_names = loaded
    return p


def _spec(**kw):
    fields = dict(positions="2-12", max_mutations=3, liabilities=["glycosylation", "deamidation"], forbid="")
    fields.update(method="mh", temperature=1.0, steps=6, chains=3)
    return design_spec(**{**fields, **kw})


def test_the_rows_are_the_cli_rows_and_obey_the_constraints(pool, folders, capsys):
    experts = [["tiny", "local", 1.0], ["antiberty", "raw", "0.5"], ["", "", ""]]
    view = design_view(pool, PARENT, experts, _spec(), seed=3)
    assert pool.loaded_names == ["antiberty"] and view.names == ("tiny", "antiberty")
    design_view(pool, PARENT, experts, _spec(steps=1, chains=1))
    assert pool.loaded_names == ["antiberty"]  # each expert loaded once
    first, second = folders
    argv = ["design", PARENT, "--expert", f"{first}:local:1", "--expert", f"{second}:raw:0.5", "--seed", "3"]
    argv += ["--chains", "3", "--steps", "6", "--positions", "2-12", "--max-mutations", "3", "--device", "cpu"]
    argv += ["--forbid", "glycosylation", "--forbid", "deamidation", "--keep-parent-motifs", "--no-progress"]
    assert main(argv) == 0
    cli = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for got, want in zip(view.rows, cli, strict=True):
        assert (got["sequence"], got["mutant"], got["total"]) == (want["sequence"], want["mutant"], want["total"])
        assert got["energy_antiberty"] == want[f"energy_{second}"]
    for r in view.rows:
        s = r["sequence"]
        assert r["mutations"] <= 3 and s[0] == PARENT[0] and s[12:] == PARENT[12:] and r["in_constraints"]
        assert "NG" not in s[:11] and not re.search("N[^P][ST]", s[:12])
    table = design_rows(view)
    assert design_headers(view)[:5] == ["chain", "mutant", "mutations", "E_tiny", "E_antiberty"]
    assert [row[0] for row in table] == [0, 1, 2] and table[0][-1] == view.rows[0]["sequence"]
    assert "3 chain(s) of 6 steps" in design_summary(view)


def test_the_changed_residues_are_highlighted(pool):
    view = design_view(pool, PARENT, [["tiny", "local", 1]], _spec(steps=20, chains=2, max_mutations=-1), seed=1)
    page = design_html(view)
    for r in view.rows:
        marks = re.findall(r'title="([A-Z]\d+[A-Z])"', page.split(f"<b>chain {r['chain']}</b>")[1].split("</div>")[0])
        assert ":".join(marks) == r["mutant"] == mutant_string(PARENT, r["sequence"])
    assert f"<b>parent</b>&nbsp;&nbsp;{PARENT}" in page


@pytest.mark.parametrize(
    "experts,kw,message",
    [
        ([["nope", "local", 1]], {}, "expert 'nope' is not one of the models offered here: tiny, antiberty"),
        ([["tiny", "local", 0]], {}, "choose at least one expert with a non-zero weight"),
        ([["tiny", "local", "x"]], {}, "expert tiny: the weight must be a number"),
        ([["tiny", "local", 1]], {"chains": 9}, "at most 8 chains here"),
        ([["tiny", "local", 1]], {"steps": 501}, "at most 500 steps here"),
        ([["tiny", "nope", 1]], {}, "an expert's energy kind must be one of ('local', 'raw', 'mutant_marginal')"),
    ],
)
def test_bad_input_is_one_line(pool, experts, kw, message):
    with pytest.raises(MLMProbError) as e:
        design_view(pool, PARENT, experts, _spec(**kw), limits=Limits())
    assert message in str(e.value) and "\n" not in str(e.value)


def test_bad_constraints_are_one_line():
    with pytest.raises(MLMProbError, match="not a valid regular expression"):
        design_view(None, PARENT, [["tiny", "local", 1]], _spec(forbid="N[ST"))
    with pytest.raises(MLMProbError, match="position 0"):
        _spec(positions="0-3")
