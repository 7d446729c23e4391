"""bench/int8_kernels.py on tiny shapes: both int8 products give the same bits, and the report has a row
per layer shape."""

import pytest

from mlmprob.models.precision import int8_supported
from tests.conftest import load_bench

pytestmark = pytest.mark.usefixtures("one_thread")


def test_report_rows_and_same_bits(tmp_path, monkeypatch):
    if not int8_supported():
        pytest.skip("no fbgemm int8 kernels in this torch build")
    ik = load_bench("int8_kernels")
    monkeypatch.setattr(ik, "SHAPES", {"tiny up": (16, 48), "tiny down": (48, 16)})
    out = tmp_path / "r.md"
    assert ik.main(["--rows", "20", "--rounds", "2", "--out", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith("| tiny")]
    assert len(rows) == 2 and all(line.rstrip().endswith("| yes |") for line in rows)
