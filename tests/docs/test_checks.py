"""The checked habits (issue 36, item 7): ``make check`` runs ruff's linter and formatter check and mypy, and CI
runs it after installing. The linter and the formatter check are fast and run here too (skipped when ruff is
not installed); mypy takes minutes on this code base, so it runs in ``make check`` (CI) only."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _recipe(target: str) -> list[str]:
    m = re.search(rf"^{target}:[^\n]*\n((?:\t[^\n]*\n)*)", (ROOT / "Makefile").read_text(), re.M)
    assert m, f"the Makefile has no target {target!r}"
    return [line.strip() for line in m.group(1).splitlines()]


def test_make_check_runs_ruff_and_mypy_and_ci_runs_it():
    assert _recipe("check") == ["$(BIN)/ruff check .", "$(BIN)/ruff format --check .", "$(BIN)/mypy"]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert ci.index("make check") == ci.index("make install") + 1 and ci[-1] == "make test"
    config = (ROOT / "pyproject.toml").read_text()
    assert "[tool.ruff.lint]" in config and "[tool.mypy]" in config and 'packages = ["mlmprob"]' in config


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed (pip install -e '.[dev]')")
@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]], ids=["check", "format"])
def test_ruff_finds_nothing(args):
    done = subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
