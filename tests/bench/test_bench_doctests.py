"""The docstring examples of every bench/ script run as tests (the suite's doctest collection covers
src/ only); importing a script must run nothing."""

import doctest
from pathlib import Path

import pytest

from tests.conftest import BENCH, load_bench

SCRIPTS = sorted(p.stem for p in Path(BENCH).glob("*.py"))


@pytest.mark.parametrize("name", SCRIPTS)
def test_bench_docstring_examples(name):
    mod = load_bench(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} doctest examples failed"
