"""bench/int8_attention_products.py: its int8 attention is an attention (close to float32's, key lengths not a
multiple of 8 included), and the report has a row per shape."""

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import load_bench

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("length", [8, 13])
def test_int8_attention_is_close_to_float32(length):
    if not hasattr(torch, "_int_mm"):
        pytest.skip("no torch._int_mm in this torch build")
    bench = load_bench("int8_attention_products")
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, length, 16, generator=g) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v)
    out = bench.int8_attention(q, k, v)
    assert out.shape == ref.shape
    # int8 rounding: each factor within half a step of 1/127 of its largest value
    assert (out - ref).abs().max() < 0.1
    # and not the trivial answer: far from the mean of v
    assert (v.mean(-2, keepdim=True).expand_as(ref) - ref).abs().max() > 0.3


def test_report_has_a_row_per_shape(monkeypatch, capsys):
    if not hasattr(torch, "_int_mm"):
        pytest.skip("no torch._int_mm in this torch build")
    bench = load_bench("int8_attention_products")
    monkeypatch.setattr(bench, "SHAPES", {"tiny": (2, 2, 12, 16), "tiny2": (1, 2, 24, 8)})
    assert bench.main(["--rounds", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| tiny")]
    assert len(rows) == 2
