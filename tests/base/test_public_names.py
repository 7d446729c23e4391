"""Public names that are what they say: ``mlmprob.energy`` and ``mlmprob.infill`` are plain functions (the
functions of ``mlmprob.energies`` and ``mlmprob.infilling``, whichever way they are imported), no module is
callable and none swaps its class (issue 36, item 5)."""

import importlib
import importlib.util
import inspect
import subprocess
import sys
import types

import torch

import mlmprob
from mlmprob import ExactMLM


def test_energy_and_infill_are_plain_functions():
    import mlmprob.energies as energies
    import mlmprob.infilling as infilling
    from mlmprob import energy, infill

    assert inspect.isfunction(energy) and inspect.isfunction(infill)
    assert energy is mlmprob.energy is energies.energy is importlib.import_module("mlmprob.energies").energy
    assert infill is mlmprob.infill is infilling.infill is importlib.import_module("mlmprob.infilling.beam").infill
    assert type(energies) is types.ModuleType and type(infilling) is types.ModuleType
    assert not callable(energies) and not callable(infilling)
    m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    ids = torch.tensor([[1, 1]])
    assert torch.equal(mlmprob.energy(m, ids, kind="raw"), energies.energy(m, ids, kind="raw"))
    assert mlmprob.infill(m, [2, 2], [0, 1], method="standard") == infilling.infill(
        m, [2, 2], [0, 1], method="standard"
    )
    assert list(inspect.signature(mlmprob.energy).parameters)[:3] == ["mlm", "input_ids", "positions"]
    assert list(inspect.signature(mlmprob.infill).parameters)[:3] == ["mlm", "input_ids", "positions"]


def test_no_module_swaps_its_class():
    from pathlib import Path

    src = Path(mlmprob.__file__).resolve().parent
    found = [str(p.relative_to(src)) for p in sorted(src.rglob("*.py")) if "__class__ =" in p.read_text("utf-8")]
    assert not found, found
    assert importlib.util.find_spec("mlmprob.callable_module") is None


def test_a_fresh_import_of_a_function_first_gives_the_function():
    code = (
        "import mlmprob, inspect; from mlmprob import infill, energy; import mlmprob.energies as e; "
        "print(inspect.isfunction(infill), inspect.isfunction(energy), inspect.ismodule(e), callable(e), "
        "mlmprob.energy is e.energy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "True", "False", "True"]


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
