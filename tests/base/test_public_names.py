"""Public names that do not shadow their modules: ``mlmprob.energy`` and ``mlmprob.infill`` are the modules
(whichever way they are imported), and calling them calls their functions as the README documents."""

import importlib
import inspect
import subprocess
import sys

import torch

import mlmprob
from mlmprob import ExactMLM


def test_energy_and_infill_are_their_modules_and_callable():
    import mlmprob.energy as energy_module
    import mlmprob.infill as infill_module
    from mlmprob import energy, infill

    assert energy is energy_module is mlmprob.energy is sys.modules["mlmprob.energy"]
    assert infill is infill_module is mlmprob.infill is sys.modules["mlmprob.infill"]
    assert inspect.ismodule(energy) and inspect.ismodule(infill)
    assert energy.token_scores is importlib.import_module("mlmprob.energy").token_scores
    assert infill.beam_search is importlib.import_module("mlmprob.infill.beam").beam_search
    m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    ids = torch.tensor([[1, 1]])
    assert torch.equal(mlmprob.energy(m, ids, kind="raw"), energy.energy(m, ids, kind="raw"))
    assert mlmprob.infill(m, [2, 2], [0, 1], beam_size=2) == infill.infill(m, [2, 2], [0, 1], beam_size=2)
    assert list(inspect.signature(mlmprob.energy).parameters)[:3] == ["mlm", "input_ids", "kind"]
    assert list(inspect.signature(mlmprob.infill).parameters)[:3] == ["mlm", "input_ids", "positions"]


def test_a_fresh_import_of_the_submodule_first_gives_the_module():
    code = (
        "import mlmprob.energy as e, mlmprob.infill as i, inspect; "
        "print(inspect.ismodule(e), inspect.ismodule(i), callable(e), callable(i), hasattr(e, 'token_scores'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True"] * 5


def test_the_version_has_one_source():
    """``pyproject.toml`` reads the version from ``mlmprob.__version__`` (no second literal), and the installed
    distribution's metadata says the same."""
    import importlib.metadata
    import re
    from pathlib import Path

    import mlmprob

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and 'version = {attr = "mlmprob.__version__"}' in pyproject
    assert not re.search(r'(?m)^version\s*=\s*"', pyproject)
    assert importlib.metadata.version("mlmprob") == mlmprob.__version__
