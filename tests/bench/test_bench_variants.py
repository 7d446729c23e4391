"""bench/bench_variants.py --quick on a tiny protein-like BERT: the forward passes it counts are the ones the
row plan implies (saturate: L + 1; batched never more than the per-variant loop; the loop's per-method costs)."""

import json

import pytest

from tests.conftest import load_bench

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def quick(tiny_bert_dir, tmp_path_factory):
    bench = load_bench("bench_variants")
    out = tmp_path_factory.mktemp("bench") / "v.md"
    bench.main(["--quick", "--model", str(tiny_bert_dir), "--out", str(out)])
    return json.loads(out.with_suffix(".json").read_text()), out.read_text()


def _rows(res, name):
    s = next(s for s in res["sets"] if s["set"] == name)
    return s, {r["method"]: r for r in s["rows"]}


def test_saturate_takes_L_plus_1_passes(quick):
    res, text = quick
    sat = res["saturate"]
    L = res["meta"]["length"]
    assert L == 120 and sat["n"] == sat["written"] == 19 * L
    assert sat["stream"]["passes"] == L + 1
    assert sat["loop"]["passes"] == 2 * sat["n_loop"] > 0
    assert f"{L + 1} passes = L + 1" in text and "**met**" in text


def test_batched_passes_are_the_distinct_rows(quick):
    res, _ = quick
    L = res["meta"]["length"]
    for name in ("singles", "doubles", "multi"):
        s, rows = _rows(res, name)
        variants = [tuple(map(tuple, v)) for v in s["variants"]]
        sites = {p for v in variants for p, _ in v}
        assert rows["wt_marginals"]["batched"]["passes"] == 1
        assert rows["masked_marginals"]["batched"]["passes"] == len(sites) <= L
        assert rows["masked_marginals_all"]["batched"]["passes"] == len({tuple(p for p, _ in v) for v in variants})
        assert rows["mutant_marginals"]["batched"]["passes"] == len(set(variants))
        n_pll = rows["pll_delta"]["n"]
        assert rows["pll_delta"]["batched"]["passes"] == (n_pll + 1) * L
        if name == "singles":  # hcb, masked_marginals_mt and epistasis read the masked_marginals rows
            for m in ("masked_marginals_mt", "hcb", "epistasis"):
                assert rows[m]["batched"]["passes"] == len(sites)


def test_loop_passes_follow_the_per_method_formula_and_batched_never_costs_more(quick):
    res, _ = quick
    report = load_bench("variants_report")
    L = res["meta"]["length"]
    for s in res["sets"]:
        for r in s["rows"]:
            per = report.loop_passes(r["method"], s["k"], L)
            assert r["loop"]["passes"] == per * r["n_loop"], (s["set"], r["method"])
            assert r["n_loop"] == r["n"]  # --quick loops over every variant: the comparison is exact
            assert r["batched"]["passes"] <= r["loop"]["passes"]
            assert r["max_diff"] is not None and r["max_diff"] < 1e-5
    _, rows = _rows(res, "singles")
    assert rows["masked_marginals"]["batched"]["passes"] < rows["masked_marginals"]["loop"]["passes"]
