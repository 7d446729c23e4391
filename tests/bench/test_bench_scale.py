"""The pure helpers of bench/bench_scale.py (FLOP count, goals, report); the benchmark itself is not run."""

import pytest

from tests.conftest import load_bench


@pytest.fixture(scope="module")
def lib():
    return load_bench("scale_lib")


def test_flop_count_of_a_tiny_bert_matches_a_hand_count(lib):
    import transformers

    cfg = transformers.BertConfig(
        vocab_size=10,
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
    )
    c = lib.model_flop_counts(transformers.BertForMaskedLM(cfg))
    # per layer: Q, K, V, attention output 4 x 8 x 8 = 256; FFN 8 x 16 + 16 x 8 = 256 -> 512; 2 layers
    assert c["p_enc"] == 1024
    # head: transform dense 8 x 8 + decoder 8 x 10 (the pooler is not part of BertForMaskedLM)
    assert c["p_head"] == 64 + 80
    assert (c["hidden"], c["layers"]) == (8, 2)
    # L = 5: 2 x 1024 x 5 linear + 4 x 25 x 8 x 2 attention + 2 x 144 head, by hand
    assert lib.copy_flops(c["p_enc"], c["p_head"], c["hidden"], c["layers"], 5) == 10240 + 1600 + 288


def test_flop_count_of_esm_skips_the_contact_head(lib):
    import transformers

    cfg = transformers.EsmConfig(
        vocab_size=33,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        position_embedding_type="rotary",
        pad_token_id=1,
        mask_token_id=32,
    )
    c = lib.model_flop_counts(transformers.EsmForMaskedLM(cfg))
    assert c["p_enc"] == 4 * 64 + 2 * 128 and c["p_head"] == 64 + 8 * 33


def _fake_results(lib, cpu_mfu=0.6, ratio=1.1):
    peak = 100e9
    flops = 1e9
    row = {
        "model": "antiberty",
        "device": "cpu",
        "dtype": "float32",
        "length": 128,
        "copies": 10,
        "flops_per_copy": flops,
        "seconds": 10 * flops / (cpu_mfu * peak),
        "params": 26e6,
        "peak_before": peak,
        "peak_after": 0.9 * peak,
        "cpu_seconds": 0.5,
        "peak_cpu_before": 50e9,
        "peak_cpu_after": 40e9,
    }
    peaks = [
        {
            "model": "antiberty",
            "device": "cpu",
            "dtype": "float32",
            "n": 2048,
            "before": peak,
            "after": 0.9 * peak,
            "cpu_before": 50e9,
            "cpu_after": 40e9,
        }
    ]
    mc = [
        {
            "model": "antiberty",
            "device": "cpu",
            "dtype": "float32",
            "length": 128,
            "n": 1,
            "mlmprob_s": 1.0,
            "minicons_s": 1.5,
            "max_diff": 2e-5,
            "mlmprob_cpu": 2.0,
            "minicons_cpu": 2.5,
        }
    ]
    scaling = {
        "unit": "CPU worker processes",
        "n": 2,
        "n_seqs": 100,
        "efficiency": 0.7,
        "efficiency_net": 0.9,
        "desc": "d",
        "rows": [
            {
                "label": "1 worker x 1 thread",
                "wall": 10.0,
                "walls": [10.0],
                "startup": 1.0,
                "cmd": "python -m mlmprob score x",
            }
        ],
    }
    stream = {
        "small": 10000,
        "large": 1000000,
        "ratio": ratio,
        "desc": "d",
        "rows": [
            {"n": 10000, "wall": 5.0, "rss": 400 * 2**20, "cmd": "c1"},
            {"n": 1000000, "wall": 300.0, "rss": ratio * 400 * 2**20, "cmd": "c2"},
        ],
    }
    return [row], peaks, mc, scaling, stream


def test_row_stats_and_goals(lib):
    rows, _, mc, scaling, stream = _fake_results(lib, cpu_mfu=0.6)
    st = lib.pll_row_stats(rows[0])
    assert st["mfu"] == pytest.approx(0.6)  # against the larger of the two peaks
    assert st["mfu_cpu"] == pytest.approx(10 * 1e9 / 0.5 / 50e9)
    assert st["seqs_s"] == pytest.approx(st["copies_s"] / 128)
    goals = {g[0][:20]: g[2] for g in lib.evaluate_goals(rows, mc, scaling, stream)}
    assert list(goals.values()) == [True, None, None, False, True]
    rows, *_ = _fake_results(lib, cpu_mfu=0.4)
    assert lib.evaluate_goals(rows, mc, None, None)[0][2] is False


def test_report_says_what_was_not_measured(lib):
    rows, peaks, mc, scaling, stream = _fake_results(lib)
    meta = {
        "command": "python bench/bench_scale.py --quick",
        "quick": True,
        "date": "2026-01-01 00:00",
        "machine": "AMD EPYC",
        "devices": "cpu (float32)",
        "threads": 2,
        "load_start": "1.0/1.0/1.0",
        "torch": "2",
        "transformers": "5",
        "minicons": "0.3.39",
        "no_gpu_note": "CPU only: no GPU was measured",
        "pending": ["stream"],
    }
    text = lib.render_report(meta, rows, peaks, mc, scaling, stream)
    assert "`python bench/bench_scale.py --quick`" in text
    assert "--quick` smoke run" in text and "no GPU was measured" in text and "not finished: stream" in text
    assert "| PLL on CPU at >= 50% of the fp32 matmul peak | antiberty L=128: 60%" in text
    assert "**met**" in text and "**missed**" in text and "not measured" in text
    assert "| antiberty | 128 | float32 | 1 | 1.00 | 1.50 | 1.50x | 1.25x | 2.0e-05 |" in text
    assert "| 1,000,000 | 300.0 | 440 | 1.10 |" in text


def test_cpu_facts_reads_the_flags(lib):
    f = lib.cpu_facts("model name\t: X\nflags\t\t: avx2 avx512f amx_bf16\n")
    assert (f["avx512f"], f["amx_bf16"], f["avx512_bf16"]) == (True, True, False)


def test_profile_groups_and_a_small_run(tmp_path):
    """bench/profile_pll.py: operator names go to the right group; a tiny AntiBERTy run writes a row
    whose shares add up to 100% and are dominated by the linear layers."""
    import re

    mod = load_bench("profile_pll")
    assert mod.group_of("aten::addmm").startswith("linear")
    assert mod.group_of("aten::_scaled_dot_product_flash_attention_for_cpu").startswith("attention")
    assert mod.group_of("aten::erf").startswith("element-wise")
    assert mod.group_of("aten::embedding") == "other"
    out = tmp_path / "p.md"
    assert (
        mod.main(["--models", "antiberty", "--length", "16", "--copies", "4", "--threads", "1", "--out", str(out)]) == 0
    )
    row = next(x for x in out.read_text().splitlines() if x.startswith("| antiberty |"))
    shares = [int(v) for v in re.findall(r"(\d+)%", row)]
    assert len(shares) == len(mod.GROUPS) + 1 and 97 <= sum(shares) <= 103
    assert shares[0] == max(shares)
