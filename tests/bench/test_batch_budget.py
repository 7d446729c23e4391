"""bench/batch_budget.py on a tiny random ESM-2: one row per (model, precision), every budget timed, the
PLL the same under every budget (to float rounding)."""

import pytest

from tests.conftest import load_bench

pytestmark = pytest.mark.usefixtures("one_thread")


def test_rows_per_unit(tmp_path, monkeypatch):
    import sys

    bb = load_bench("batch_budget")
    load_bench("bench_cpu")
    # the module batch_budget imports (``from bench_cpu import``): the registered one, whichever test loaded it first
    monkeypatch.setitem(sys.modules["bench_cpu"].CONFIGS, "esm2-tiny", (1, 40, 2, 80))
    lines = bb.run([("esm2-tiny", "float32")], "EVQLVESGGGLVQPGGSLRLSCAAS", threads=1, rounds=1, weights=tmp_path)
    assert len(lines) == 1 and lines[0].startswith("| esm2-tiny | float32 | 1 |")
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert len(cells) == 3 + len(bb.BUDGETS) + 1 and cells[3].endswith("(x1.00)")
    assert float(cells[-1]) < 1e-3
