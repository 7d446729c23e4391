"""The guides' Python examples run (docs/guides/, on the faster sapiens-vh model, the session's copy): the
examples that were the README's, with the README test's assertions, moved with them."""

import re
from pathlib import Path

import pytest

GUIDES = Path(__file__).resolve().parents[2] / "docs" / "guides"
LOAD = 'mlmprob.load_mlm("antiberty")'


def _example(page: str) -> str:
    """The first Python block under the page's "## Python" heading, reading the session's model."""
    text = (GUIDES / page).read_text()
    block = re.search(r"^## Python\n.*?```python\n(.*?)```", text, re.S | re.M).group(1)
    assert LOAD in block
    return block.replace(LOAD, "_loaded")


def _run(page: str, code: str, model) -> dict:
    ns: dict = {"_loaded": model}
    exec(compile(code, str(GUIDES / page), "exec"), ns)
    return ns


def test_scoring_guide_example_runs(sapiens_vh, one_thread):
    ns = _run("scoring.md", _example("scoring.md"), sapiens_vh)
    assert ns["pll"].shape == (2,) and (ns["pll"] < 0).all()


def test_sampling_guide_example_runs(sapiens_vh, one_thread):
    ns = _run("sampling.md", _example("sampling.md").replace("epochs=10", "epochs=1"), sapiens_vh)
    assert ns["r"].samples.shape[1:] == (4, ns["enc"].input_ids.shape[1])


def test_joints_guide_example_runs(sapiens_vh, one_thread):
    ns = _run("joints.md", _example("joints.md"), sapiens_vh)
    assert abs(float(ns["log_joint"].exp().sum()) - 1) < 1e-9 and ns["log_joint"].shape == (20, 20)


def test_infilling_guide_example_runs(sapiens_vh, one_thread):
    ns = _run("infilling.md", _example("infilling.md"), sapiens_vh)
    assert len(ns["fills"]) == 5 and all(len(c.tokens) == 4 for c in ns["fills"])


def test_variant_effects_guide_example_runs(sapiens_vh, tmp_path, monkeypatch, one_thread):
    """The variant effects guide's block on sapiens-vh, with 5 + 5 library variants (the README's test)."""
    from mlmprob.data import shared_data_dir

    data = shared_data_dir()
    if data is None or not (data / "antibody" / "mHER_H3_AgPos.csv").is_file():
        pytest.skip("antibody/mHER_H3_AgPos.csv from the shared data folder is absent")
    code = _example("variants.md").replace("[:500]", "[:5]").replace("../shared/data", str(data))
    monkeypatch.chdir(tmp_path)
    ns = _run("variants.md", code, sapiens_vh)
    assert ns["s"]["hcb"].shape == (3,) and bool(ns["s"]["ag"][2].isnan()) is False
    assert ns["sat"].masked_marginals.shape == (120, 20) and ns["sat"].n_forward == 121
    assert (tmp_path / "trastuzumab_vh.csv").is_file() and (tmp_path / "trastuzumab_vh.png").is_file()
    assert ns["lib_s"]["wt_marginals"].shape == (10,) and 0 <= ns["auc"]["auroc"].value <= 1
