"""The real-data variant-effect experiment (variants_data): baselines, the runner end to end on a
synthetic copy of the data layout (with resume), and the report on fabricated results."""

import csv
import json

import pytest
import torch
from conftest import shared_data_file

from experiments import variants_data, variants_data_runner
from experiments.variants_baselines import BLOSUM62, KYTE_DOOLITTLE, ORDER, blosum_sum, hamming, kd_mean
from experiments.variants_data_common import FRAMEWORK, TAIL, WT_CDR, load_library, read_chunks, result_path
from experiments.variants_data_report import write_report
from mlmprob.alphabet import AMINO_ACIDS
from mlmprob.errors import MLMProbError
from mlmprob.likelihood import loglik
from mlmprob.metrics.ranking import auroc
from mlmprob.runtime.log import ResumableLog
from mlmprob.variants import score_variants

# -- baselines ---------------------------------------------------------------------------------------


def test_blosum62_known_entries_and_symmetry():
    assert set(BLOSUM62) == set(ORDER) and all(set(r) == set(ORDER) for r in BLOSUM62.values())
    assert sorted(ORDER) == sorted(AMINO_ACIDS)  # the table's order of the one alphabet
    assert all(BLOSUM62[a][b] == BLOSUM62[b][a] for a in ORDER for b in ORDER)
    known = {
        ("W", "W"): 11,
        ("C", "C"): 9,
        ("A", "A"): 4,
        ("H", "H"): 8,
        ("P", "P"): 7,
        ("F", "Y"): 3,
        ("I", "V"): 3,
        ("D", "E"): 2,
        ("H", "Y"): 2,
        ("W", "N"): -4,
        ("G", "I"): -4,
        ("C", "E"): -4,
        ("K", "R"): 2,
        ("S", "T"): 1,
        ("L", "D"): -4,
        ("M", "L"): 2,
    }
    for (a, b), v in known.items():
        assert BLOSUM62[a][b] == v, (a, b)
    for a in ORDER:  # every residue scores highest against itself
        assert BLOSUM62[a][a] == max(BLOSUM62[a].values()) and BLOSUM62[a][a] > 0


def test_kyte_doolittle_and_scores():
    assert len(KYTE_DOOLITTLE) == 20
    assert (KYTE_DOOLITTLE["I"], KYTE_DOOLITTLE["R"], KYTE_DOOLITTLE["G"], KYTE_DOOLITTLE["W"]) == (
        4.5,
        -4.5,
        -0.4,
        -0.9,
    )
    assert max(KYTE_DOOLITTLE, key=KYTE_DOOLITTLE.get) == "I" and min(KYTE_DOOLITTLE, key=KYTE_DOOLITTLE.get) == "R"
    assert blosum_sum(WT_CDR, WT_CDR) == 0 and hamming(WT_CDR, WT_CDR) == 0
    assert blosum_sum("WGGDGFYAMD", "WAGEGFYAMV") == BLOSUM62["G"]["A"] + BLOSUM62["D"]["E"] + BLOSUM62["D"]["V"]
    assert hamming("WGGDGFYAMD", "WAGEGFYAMV") == 3
    assert kd_mean("IR") == pytest.approx(0.0)
    for bad in (lambda: blosum_sum("AC", "A"), lambda: hamming("AX", "AC"), lambda: kd_mean(""), lambda: kd_mean("AB")):
        with pytest.raises(MLMProbError):
            bad()


# -- runner end to end -------------------------------------------------------------------------------

POS = ["WAGDGFYAMD", "WGGDGFYAME", "FGGDAFYAMD", "WGGDGFYAMD", "YYYDGFYAMD"]  # wild type left out; last in both
NEG = ["WGGDGFYAAA", "KKKKGFYAMD", "WGPDGFYPMD", "YYYDGFYAMD"]


def _write_csv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _fake_data(d):
    _write_csv(
        d / "antibody/mHER_H3_AgPos.csv", ["", "AASeq", "AgClass"], [[i, s, 1] for i, s in enumerate(POS + POS[:1])]
    )  # a duplicate row too
    _write_csv(d / "antibody/mHER_H3_AgNeg.csv", ["", "AASeq", "AgClass"], [[i, s, 0] for i, s in enumerate(NEG)])
    vhs = ["EVQLVESGGGLV", "QVQLQESGPGLV", "EVKLLESGGGLA", "QVQLVQSGAEVK"]
    _write_csv(
        d / "antibody/GDPa1_v1.2.csv",
        ["antibody_id", "antibody_name", "Titer", "HIC", "vh_protein_sequence"],
        [[f"G{i}", f"g{i}", 10.0 * i, "" if i == 0 else 3.0 - i, v] for i, v in enumerate(vhs)],
    )
    _write_csv(
        d / "antibody/jain137.csv",
        ["Name", "VH", "VL", "HEK Titer (mg/L)", "Fab Tm by DSF (°C)"],
        [[f"j{i}", v, "DIQMTQ", 5.0 + i, 70.0 - i] for i, v in enumerate(vhs)]
        + [["", "", "", "", ""], ["aArbitrarily long RT", "", "", "", ""]],
    )


def test_library_order_is_balanced_and_nested(tmp_path):
    _fake_data(tmp_path)
    lib = load_library(tmp_path, seed=0)
    assert sorted(lib.cdrs) == sorted(set(POS[:4] + NEG[:3]) - {WT_CDR})
    assert lib.labels[:6] == [1, 0, 1, 0, 1, 0] and lib.n_both == 1
    assert lib.meta()["mutations"] == "".join(format(lib.mutations(i), "x") for i in range(len(lib.cdrs)))
    assert load_library(tmp_path, seed=1).cdrs != lib.cdrs or len(lib.cdrs) < 3


def test_runner_end_to_end_with_resume(tmp_path, monkeypatch, sapiens_vh):
    import mlmprob.models

    mlm = sapiens_vh
    monkeypatch.setattr(mlmprob.models, "load_mlm", lambda name, dtype=None: {"sapiens-vh": mlm}[name])  # loaded once
    _fake_data(tmp_path)
    monkeypatch.setattr(variants_data_runner, "DEFAULT_CHUNK", 2)
    monkeypatch.setitem(variants_data_runner.CHUNK, "jain_pll", 3)
    monkeypatch.setitem(variants_data_runner.CHUNK, "chain", 2)
    out = tmp_path / "res" / "raw"
    base = ["--data", str(tmp_path), "--out", str(out), "--threads", "1", "--n-boot", "20"]
    first = "baseline:baselines:all,sapiens-vh:marginals:all,sapiens-vh:hcb:1,sapiens-vh:jain_pll:3"
    assert variants_data.main(base + ["--plan", first, "--no-report"]) == 0
    hcb_path = result_path(out, "sapiens-vh", "hcb")
    before = hcb_path.read_text()
    assert len(before.splitlines()) == 1
    jain = result_path(out, "sapiens-vh", "jain_pll")
    jain.write_text(jain.read_text() + '{"start": 3, "sto')  # a chunk cut short by a kill
    full = (
        first.replace("hcb:1", "hcb:2").replace("jain_pll:3", "jain_pll:all")
        + ",sapiens-vh:masked_marginals_all:2,sapiens-vh:ag:all,sapiens-vh:chain:2,sapiens-vh:gdpa1_loglik:all"
    )
    assert variants_data.main(base + ["--plan", full]) == 0
    after = hcb_path.read_text()
    assert after.startswith(before) and len(after.splitlines()) == 2  # the first chunk kept, one added
    assert [c["start"] for c in read_chunks(jain)] == [0, 3] and jain.read_text().endswith("\n")
    assert sum(c["n"] for c in read_chunks(jain)) == 4
    assert variants_data.main(base + ["--plan", full, "--no-report"]) == 0  # nothing left to do
    assert hcb_path.read_text() == after

    # the scores are those of score_variants on the full VH
    lib = load_library(tmp_path, seed=0)
    enc = mlm.encode([FRAMEWORK + WT_CDR + TAIL])
    off = FRAMEWORK.__len__() + 1  # one leading special token
    toks = {a: int(mlm.encode([a]).input_ids[0][1]) for a in "ACDEFGHIKLMNPQRSTVWY"}
    muts = [[(off + j, toks[c]) for j, (c, w) in enumerate(zip(cdr, WT_CDR)) if c != w] for cdr in lib.cdrs[:4]]
    want = score_variants(mlm, enc.input_ids[0], muts, methods=["hcb", "epistasis"])
    got = [x for c in read_chunks(hcb_path) for x in c["scores"]["hcb"]]
    assert torch.allclose(torch.tensor(got, dtype=torch.float64), want["hcb"], atol=1e-4)
    chain = read_chunks(result_path(out, "sapiens-vh", "chain"))
    assert [(c["start"], c["n_orders"], c["seed"]) for c in chain] == [(0, 6, 0), (2, 6, 0)]
    want = score_variants(
        mlm, enc.input_ids[0], muts, methods=["chain", "masked_marginals"], chain_orders=6, chain_seed=0
    )
    got = torch.tensor([x for c in chain for x in c["scores"]["chain"]], dtype=torch.float64)
    assert torch.allclose(got, want["chain"], atol=1e-4)
    single = [i for i, m in enumerate(muts) if len(m) == 1]
    assert torch.allclose(got[single], want["masked_marginals"][single], atol=1e-4)  # one site: the marginal
    assert chain[0]["rows_est"] == variants_data_runner.chain_rows(mlm, enc.input_ids[0], muts[:2], True) > 0
    ll = read_chunks(result_path(out, "sapiens-vh", "gdpa1_loglik"))
    assert result_path(out, "sapiens-vh", "gdpa1_loglik").name == "gdpa1-sapiens-vh-loglik.jsonl"
    vhs = [a for c in ll for a in c["ids"]]
    ref = loglik(
        mlm, mlm.encode(["EVQLVESGGGLV", "QVQLQESGPGLV", "EVKLLESGGGLA", "QVQLVQSGAEVK"]).input_ids, order="l2r"
    ).per_order[:, 0]
    assert vhs == ["g0", "g1", "g2", "g3"] and [x for c in ll for x in c["loglik"]] == pytest.approx(
        ref.tolist(), abs=1e-4
    )
    base_rows = read_chunks(result_path(out, "baseline", "baselines"))[0]["scores"]
    assert base_rows["neg_hamming"] == [-hamming(WT_CDR, c) for c in lib.cdrs]
    ag = read_chunks(result_path(out, "sapiens-vh", "ag"))[0]
    assert ag["idx"] == [i for i in range(len(lib.cdrs)) if lib.mutations(i) == 2]

    report = (tmp_path / "res" / "README.md").read_text()
    assert "| hcb (sapiens-vh) |" in report and "Jain-137" in report and "not available" in report
    assert "PLL (sapiens-vh)" in report and "n=4" in report
    assert "| LL l2r (sapiens-vh) | LL l2r/L (sapiens-vh) |" in report and "| sapiens-vh | gdpa1_loglik | 4 |" in report
    assert "| chain (sapiens-vh) |" in report and "`chain` (sapiens-vh) is " in report
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert [r["event"] for r in runs] == ["start", "finish"] * 3


def test_runner_errors(tmp_path, capsys):
    assert variants_data.main(["--data", str(tmp_path), "--out", str(tmp_path / "o"), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "mHER_H3_AgPos.csv" in err and "not found" in err
    _fake_data(tmp_path)
    (tmp_path / "o").mkdir()
    held = ResumableLog(tmp_path / "o" / "runs.jsonl")  # a second runner on one --out is refused
    assert (
        variants_data.main(
            ["--data", str(tmp_path), "--out", str(tmp_path / "o"), "--no-report", "--plan", "baseline:baselines:all"]
        )
        == 2
    )
    assert "being written by another process" in capsys.readouterr().err
    held.close()
    assert (
        variants_data.main(
            ["--data", str(tmp_path), "--out", str(tmp_path / "o"), "--no-report", "--plan", "baseline:baselines:all"]
        )
        == 0
    )
    with pytest.raises(MLMProbError, match="unknown group"):
        variants_data_runner.parse_plan("antiberty:nope:10")
    with pytest.raises(MLMProbError, match="baselines"):
        variants_data_runner.parse_plan("antiberty:baselines:all")


# -- report on fabricated results --------------------------------------------------------------------


def test_report_on_fabricated_results(tmp_path):
    g = torch.Generator().manual_seed(0)
    n = 400
    labels = torch.tensor([1, 0] * (n // 2))
    ks = torch.randint(1, 11, (n,), generator=g)
    good = labels + torch.randn(n, generator=g, dtype=torch.float64)  # AUROC ~0.76
    bad = torch.randn(n, generator=g, dtype=torch.float64)  # AUROC ~0.5
    out = tmp_path / "raw"
    out.mkdir()
    meta = {
        "seed": 0,
        "n": n,
        "n_pos": n // 2,
        "n_neg": n // 2,
        "rows_pos_file": 210,
        "rows_neg_file": 200,
        "in_both_files_dropped": 5,
        "sha1": "x",
        "labels": "".join(map(str, labels.tolist())),
        "mutations": "".join(format(int(k), "x") for k in ks),
    }
    (out / "library.json").write_text(json.dumps(meta))

    def chunk(lo, hi, scores):
        return (
            json.dumps(
                {
                    "start": lo,
                    "stop": hi,
                    "seconds": 1.0,
                    "cpu_seconds": 0.5,
                    "n": hi - lo,
                    "rows_est": hi - lo,
                    "scores": {k: v[lo:hi].tolist() for k, v in scores.items()},
                }
            )
            + "\n"
        )

    (out / "mher-baseline-baselines.jsonl").write_text(
        chunk(0, n, {"blosum62": bad, "neg_hamming": -ks.double(), "neg_kd_cdrh3": -bad})
    )
    (out / "mher-m1-marginals.jsonl").write_text(chunk(0, n, {"wt_marginals": good, "masked_marginals": bad}))
    (out / "mher-m1-hcb.jsonl").write_text(
        chunk(0, 100, {"hcb": good, "epistasis": bad}) + chunk(100, 200, {"hcb": good, "epistasis": bad})
    )
    (out / "mher-m1-chain.jsonl").write_text(chunk(0, 200, {"chain": -ks.double()}))  # the count: 0.5 within k
    (out / "runs.jsonl").write_text(json.dumps({"event": "start", "command": "python -m x", "started": "t"}) + "\n")
    (tmp_path / "notes.md").write_text("Hand-written verdict.")
    text = write_report(out, tmp_path / "README.md", n_boot=50).read_text()
    want = float(auroc(good, labels))
    assert f"| wt_marginals (m1) | {want:.3f} [" in text
    assert "| neg_hamming | " in text and "0.500 [0.500, 0.500] |" in text  # within-k AUROC of the count
    assert "### 400 (all) variants" in text and "### 200 (100 per class) variants" in text
    assert "`wt_marginals (m1)` on 400 (all): beats blosum62" in text
    assert "Hand-written verdict." in text and "python -m x" in text
    assert "`hcb` (m1) is better than `masked_marginals`" in text
    line = next(x for x in text.splitlines() if "`chain` (m1) is" in x)
    assert "within k, not distinguishable from it (Δ AUROC within k " in line
    assert "| chain (m1) | " in text and "| m1 | chain | 200 |" in text
    assert "| m1 | hcb | 200 | 2.0 |" in text


def test_real_library_counts():
    pos = shared_data_file("antibody/mHER_H3_AgPos.csv")
    shared_data_file("antibody/mHER_H3_AgNeg.csv")
    lib = load_library(pos.parent.parent, seed=0)
    assert (lib.n_both, sum(lib.labels), len(lib.labels) - sum(lib.labels)) == (2342, 8935, 25114)
    assert all(len(c) == 10 for c in lib.cdrs) and lib.labels[:4000].count(1) == 2000
