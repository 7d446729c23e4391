"""The README's Python examples run (on the faster sapiens-vh model, one MH epoch)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


MAKEFILE = README.parent / "Makefile"


def _first_commands(text: str) -> list[str]:
    """The commands of the README's first code block (comments dropped)."""
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", text, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def _recipe(target: str) -> str:
    """The recipe lines of a Makefile target, and its prerequisites' (one level)."""
    text = MAKEFILE.read_text()
    m = re.search(rf"^{target}:([^\n]*)\n((?:\t[^\n]*\n)*)", text, re.M)
    assert m, f"the Makefile has no target {target!r}"
    return m.group(1) + "\n" + m.group(2)


def test_readme_first_two_commands_are_the_demo_and_the_tests():
    """The README's first two commands are Makefile targets that install everything and run, offline, the
    main job on the default (embedded) model and the test suite that CI runs."""
    assert _first_commands(README.read_text())[:2] == ["make demo", "make test"]
    demo, tests = _recipe("demo"), _recipe("test")
    assert "$(STAMP)" in demo and "$(STAMP)" in tests  # both install first
    assert "HF_HUB_OFFLINE=1" in demo and "mlmprob demo" in demo  # offline, the main job
    assert "HF_HUB_OFFLINE=1" in tests and "-m pytest" in tests
    ci = (README.parent / ".ci" / "run").read_text()
    assert ci.rstrip().splitlines()[-1] == "make test"  # CI runs the README's test command


def test_readme_python_examples_run():
    text = README.read_text()
    assert _first_commands(text) == ["make demo", "make test"]
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    code = blocks[0].replace('"antiberty"', '"sapiens-vh"') + "\n" + blocks[1].replace("epochs=10", "epochs=1")
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)
    assert ns["pll"].shape == (2,) and (ns["pll"] < 0).all()
    assert ns["r"].samples.shape[1:] == (4, ns["enc"].input_ids.shape[1])
    assert abs(float(ns["log_joint"].exp().sum()) - 1) < 1e-9 and ns["log_joint"].shape == (20, 20)
    assert len(ns["fills"]) == 5 and all(len(c.tokens) == 4 for c in ns["fills"])


def test_readme_variant_effects_example_runs(sapiens_vh, tmp_path, monkeypatch, one_thread):
    """The "Variant effects" block on sapiens-vh (the session's copy), with 5 + 5 library variants."""
    import pytest

    from mlmprob.data import shared_data_dir

    data = shared_data_dir()
    if data is None or not (data / "antibody" / "mHER_H3_AgPos.csv").is_file():
        pytest.skip("antibody/mHER_H3_AgPos.csv from the shared data folder is absent")
    text = README.read_text()
    block = re.search(r"## Variant effects.*?```python\n(.*?)```", text, re.S).group(1)
    assert 'mlm = mlmprob.load_mlm("antiberty")' in block
    code = (
        block.replace('mlmprob.load_mlm("antiberty")', "_loaded")
        .replace("[:500]", "[:5]")
        .replace("../shared/data", str(data))
    )
    monkeypatch.chdir(tmp_path)
    ns: dict = {"_loaded": sapiens_vh}
    exec(compile(code, "README.md", "exec"), ns)
    assert ns["s"]["hcb"].shape == (3,) and bool(ns["s"]["ag"][2].isnan()) is False
    assert ns["sat"].masked_marginals.shape == (120, 20) and ns["sat"].n_forward == 121
    assert (tmp_path / "trastuzumab_vh.csv").is_file() and (tmp_path / "trastuzumab_vh.png").is_file()
    assert ns["lib_s"]["wt_marginals"].shape == (10,) and 0 <= ns["auc"]["auroc"].value <= 1
