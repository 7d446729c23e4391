"""The moves of issue 50 from the command line and in the guide: ``--sites``, ``--informed``, ``--delayed`` and an
expert of kind ``mutant_marginal`` run, are recorded in the output's configuration (only when not at their
default, so older outputs resume), and a resume with another move is refused in one line."""

import json
import re
from pathlib import Path

import torch

from mlmprob.cli import main
from mlmprob.designing import DesignSpec

PARENT = "EVQLVESGGGLVQPGGSLRLS"


def test_moves_run_are_recorded_and_a_changed_move_is_refused_on_resume(tmp_path, capsys):
    out = tmp_path / "d.jsonl"
    argv = ["design", PARENT, "--chains", "2", "--steps", "3", "--positions", "3-8", "--no-progress"]
    argv += ["--informed", "--sites", "2", "--delayed", "--expert", "antiberty:mutant_marginal", "--out", str(out)]
    assert main(argv) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(r["sequence"][:2] == PARENT[:2] and r["sequence"][8:] == PARENT[8:] for r in rows)
    config = json.loads(out.with_name("d.jsonl.meta.json").read_text())["config"]
    assert (config["sites"], config["informed"], config["delayed"]) == (2, True, True)
    capsys.readouterr()
    assert main([*[a for a in argv if a != "--delayed"], "--resume"]) != 0
    err = capsys.readouterr().err.strip()
    assert "delayed" in err and len(err.splitlines()) == 1, err


def test_default_moves_are_not_recorded():
    """The kernel of the first release records none of the new settings: its outputs resume as before."""
    assert not {"sites", "informed", "delayed"} & set(DesignSpec().recorded())
    assert DesignSpec(sites=2).recorded()["sites"] == 2


def test_guide_mutant_marginal_example_runs(antiberty, monkeypatch):
    """The guide's one-row example: every proposal is a change (informed) and one row each; the rows it states."""
    import mlmprob

    monkeypatch.setattr(mlmprob, "load_mlm", lambda name: antiberty)
    text = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "design.md").read_text()
    section = text[text.index("### Moves that move") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    vh = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    vh += "WGGDGFYAMDYWGQGTLVTVSS"
    ns: dict = {"vh": vh, "torch": torch, "mlmprob": mlmprob}
    exec(compile(code, "docs/guides/design.md", "exec"), ns)
    mm = ns["mm"]
    stats = mm.stats["temperatures"][0]
    assert stats["proposals_moved"] == 40 and mm.stats["model_rows"] == 42  # 2 chains x 20 steps, +2 to start
    assert 0 < stats["acceptance"] < 1 and stats["residues_moved"] == round(stats["acceptance"] * 40)
    assert all(r["sequence"][:98] == vh[:98] and r["sequence"][108:] == vh[108:] for r in mm.rows)
