"""bench/precision_rank.py's report on tiny synthetic records (the benchmark itself is not run): the run
plan, the resumable JSONL files, and the per-precision rows against float32."""

import sys

import pytest

from tests.conftest import BENCH, load_bench


@pytest.fixture(scope="module")
def pr():
    return load_bench("precision_rank")


def test_plan_runs_slow_precisions_on_every_kth_chain(pr):
    units = pr.plan(5, {"bfloat16": 2, "float16": 4})
    assert [i for i, d in units if d == "bfloat16"] == [0, 2, 4] and [i for i, d in units if d == "float16"] == [0, 4]
    assert [i for i, d in units if d == "float32"] == [0, 1, 2, 3, 4]
    assert units[:4] == [(0, "float32"), (0, "int8"), (0, "bfloat16"), (0, "float16")]


def test_jsonl_skips_a_cut_line(pr, tmp_path):
    p = tmp_path / "r" / "pll.jsonl"
    pr.append_jsonl(p, {"a": 1})
    with p.open("a") as f:
        f.write('{"a": 2')  # a line cut by a kill
    assert pr.read_jsonl(p) == [{"a": 1}] and pr.read_jsonl(tmp_path / "none.jsonl") == []


def _pll(chain, dtype, lp, seconds):
    return {"chain": chain, "dtype": dtype, "pll": sum(lp), "token_lp": lp, "seconds": seconds}


def test_report_rows_against_float32(pr):
    recs = [_pll(i, "float32", [-1.0 - i, -2.0], 10.0) for i in range(4)]
    recs += [_pll(i, "int8", [-1.0 - i + 0.1, -2.0], 5.0) for i in range(4)]
    recs += [_pll(i, "float16", [-1.0 - i, -2.0 - 0.5], 40.0) for i in (0, 2)]  # 2 chains: no Spearman
    mm = [
        {"dtype": "float32", "scores": [0.0, 1.0, 2.0, 3.0], "seconds": 1.0},
        {"dtype": "bfloat16", "scores": [0.0, 2.5, 2.0, 3.0], "seconds": 2.0},
    ]
    text = pr.report(recs, mm, [1, 0, 1, 0], command="python bench/precision_rank.py", machine="M")
    pll_int8 = [line for line in text.splitlines() if line.startswith("| int8 |")][0].split(" | ")
    assert pll_int8[1:7] == ["4", "1.0000", "0 / 6", "0.100", "0.100", "0.0500"] and pll_int8[-1] == "2.00 |"
    f16 = [line for line in text.splitlines() if line.startswith("| float16 |")][0].split(" | ")
    assert f16[1:5] == ["2", "nan", "0 / 1", "0.500"] and f16[-1] == "0.25 |"
    bf = [line for line in text.splitlines() if line.startswith("| bfloat16 |")][0].split(" | ")
    # ranks 0 2 1 3 against 0 1 2 3; binders (1, 0, 1, 0) score 0 and 2, below both non-binders
    assert bf[1:7] == ["4", "0.8000", "1 / 6", "0.3750", "1.5000", "0.0000"]
    assert text.count("| bfloat16 |") == 1 and "Command: `python bench/precision_rank.py`" in text


def test_cpu_description_names_the_matrix_features():
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    import cpu_info

    text = cpu_info.describe("model name\t: AMD EPYC\ncpu family\t: 25\nmodel\t\t: 17\nflags\t\t: avx2 avx512_bf16")
    assert "AMD EPYC (family 25, model 17)" in text and "avx512_bf16: yes" in text and "amx_int8: no" in text
