"""The README's Python examples run (on the faster sapiens-vh model, one MH epoch)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples_run():
    text = README.read_text()
    lines = text.splitlines()
    assert lines[3:5] == ["make demo   # creates .venv, installs everything, runs the main job on AntiBERTy (offline) and prints a report",
                          "make test   # creates .venv, installs everything, runs the test suite"]
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    code = blocks[0].replace('"antiberty"', '"sapiens-vh"') + "\n" + blocks[1].replace("epochs=10", "epochs=1")
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)
    assert ns["pll"].shape == (2,) and (ns["pll"] < 0).all()
    assert ns["r"].samples.shape[1:] == (4, ns["enc"].input_ids.shape[1])
    assert abs(float(ns["log_joint"].exp().sum()) - 1) < 1e-9 and ns["log_joint"].shape == (20, 20)
    assert len(ns["fills"]) == 5 and all(len(c.tokens) == 4 for c in ns["fills"])
