"""bench/peak_share.py on tiny inputs: a small random BERT (en-small's tokenizer) in three precisions, a tiny
peak GEMM, one round; the report has one row per precision, the goal line and the profile section."""

import pytest

from tests.conftest import load_bench

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def ps():
    return load_bench("peak_share")


def test_report_on_a_tiny_random_bert(ps, tmp_path):
    from precision_all import save_random_bert_base

    models = {"tiny": str(save_random_bert_base(tmp_path, sizes=(1, 32, 2, 64)))}
    seq = "the cat sat on the mat ."
    rows = ps.run_section(models, seq, list(ps.DTYPES), rounds=1, threads=1, peak_n=64, peak_reps=1)
    assert [r["dtype"] for r in rows] == ["float32", "bfloat16", "int8"]
    assert all(r["forward"] == "fused" and r["flops_run"] < r["flops"] for r in rows)
    f32 = rows[0]
    assert f32["copies"] == f32["length"] - 2 and f32["flops"] > 0 and f32["d_pll"] == 0.0
    assert all(r["peak"] > 0 and r["wall"] > 0 and 0 < ps.share(r)[0] for r in rows)
    prof = ps.profile_row(models, seq, rows[2])
    assert any(k.startswith("quantized::linear_dynamic") for k in prof)
    meta = {
        "command": "python bench/peak_share.py",
        "machine": "test",
        "date": "today",
        "uptime_start": "up",
        "chain": "tiny",
        "peak_n": 64,
    }
    text = ps.render(meta, rows, [(rows[2], prof), (rows[0], prof)])
    table = [line for line in text.splitlines() if line.startswith("| tiny |")]
    assert len(table) == 5 and "of 3 rows" in text and "Largest operators of tiny int8" in text
    assert "| tiny | float32 | fused | 1 | " in text and text.count("| tiny | int8 | fused | 1 |") == 2


def test_both_forwards_side_by_side(ps, tmp_path):
    from precision_all import save_random_bert_base

    models = {"tiny": str(save_random_bert_base(tmp_path, sizes=(2, 32, 2, 64)))}
    rows = ps.run_section(
        models,
        "the cat sat on the mat .",
        ["float32"],
        rounds=1,
        threads=1,
        peak_n=64,
        peak_reps=1,
        forwards=("fused", "transformers"),
    )
    fused, hf = rows
    assert (fused["forward"], hf["forward"]) == ("fused", "transformers")
    assert hf["flops_run"] == hf["flops"] > fused["flops_run"]
    assert 0 < hf["d_pll"] < 1e-4  # the same function, rounded differently
