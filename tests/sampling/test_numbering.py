"""Antibody regions from the numbering library (``mlmprob.numbering``, anarcism): the six IMGT CDRs of
trastuzumab, Kabat CDR-H3, scFvs, one-line errors for what does not number, and the ``--cdr`` options of
``sample``, ``infill``, ``variants --saturate`` and the app on tiny models."""

import csv
import json

import pytest
import torch

from mlmprob.cli import main
from mlmprob.errors import MLMProbError
from mlmprob.numbering import cdr_span, cdr_spans, mask_residues, number, parse_cdr
from mlmprob.sampling.cdr import cdr_mask, find_cdr_h3

# trastuzumab (Herceptin) variable domains, public (IMGT/mAb-DB, DrugBank DB00072)
VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    "WGGDGFYAMDYWGQGTLVTVSS"
)
VL = "DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSGSRSGTDFTLTISSLQPEDFATYYCQQHYTTPPTFGQGTKVEIK"
# its IMGT CDRs (IMGT/3Dstructure-DB 1n8z)
IMGT = {"H1": "GFNIKDTY", "H2": "IYPTNGYT", "H3": "SRWGGDGFYAMDY", "L1": "QDVNTA", "L2": "SAS", "L3": "QQHYTTPPT"}
UBIQUITIN = "MQIFVKTLTGKTITLEVEPSDTIENVKAKIQDKEGIPPDQQRLIFAGKQLEDGRTLSDYNIQKESTLHLVLRLRGG"


def test_the_six_imgt_cdrs_of_trastuzumab():
    got = {c: (VH if c[0] == "H" else VL)[slice(*cdr_span(VH if c[0] == "H" else VL, c))] for c in IMGT}
    assert got == IMGT
    assert cdr_span(VH, "H3") == (96, 109) and cdr_span(VL, "L1") == (26, 32)
    assert cdr_spans(VH) == {"H1": (25, 33), "H2": (50, 58), "H3": (96, 109)}
    assert cdr_spans(VL) == {"L1": (26, 32), "L2": (49, 52), "L3": (88, 97)}


def test_kabat_cdr_h3_is_imgt_107_to_117_and_agrees_with_the_motif_rule():
    s, e = cdr_span(VH, "H3", "kabat")
    assert VH[s:e] == "WGGDGFYAMDY" == IMGT["H3"][2:]
    assert (s, e) == find_cdr_h3(VH, "kabat") and cdr_span(VH, "H3") == find_cdr_h3(VH, "imgt")
    with pytest.raises(MLMProbError, match="kabat gives CDR-H3 only.*Chothia CDR-L3 are not available"):
        cdr_span(VL, "L3", "kabat")


def test_an_scfv_gives_heavy_cdrs_from_its_vh_and_light_ones_from_its_vl():
    linker = "GGGGS" * 3
    scfv = VH + linker + VL
    off = len(VH) + len(linker)
    assert cdr_span(scfv, "H3") == cdr_span(VH, "H3")
    assert cdr_span(scfv, "L3") == tuple(i + off for i in cdr_span(VL, "L3"))
    assert set(cdr_spans(scfv)) == set(IMGT)


def test_whitespace_lower_case_and_names():
    spaced = " ".join(VH.lower())
    assert cdr_span(spaced, "cdr-h3") == cdr_span(VH, "H3")
    assert [parse_cdr(x) for x in ("h1", "CDR-H2", "cdrl3", "cdr_l1")] == ["H1", "H2", "L3", "L1"]
    assert mask_residues("E V Q L", (1, 3)) == "E _ _ L"


@pytest.mark.parametrize(
    "seq, cdr, message",
    [
        (
            UBIQUITIN,
            "H3",
            "no CDR-H3: anarcism (IMGT numbering) finds no antibody variable domain in 'MQIFVKTLTGKTITLEVEPS...'",
        ),
        (VL, "H1", "finds only a kappa light-chain domain in 'DIQMTQSPSSLSASVGDRVT...', not a heavy-chain (VH) one"),
        (VH, "L2", "finds only a heavy-chain (VH) domain"),
        (VH[:98], "H3", "CDR-H3 of 'EVQLVESGGGLVQPGGSLRL...' is incomplete"),
        ("EVQLV*SGG", "H3", "cannot number 'EVQLV*SGG': sequence contains unsupported residue symbol '*'"),
        ("", "H3", "cannot number '': sequence is empty"),
        (VH, "H4", "unknown CDR 'H4': use one of H1, H2, H3, L1, L2, L3"),
        (VH, "H3", None),
    ],
)
def test_what_does_not_number_is_one_clear_line(seq, cdr, message):
    if message is None:
        assert cdr_span(seq, cdr)
        return
    with pytest.raises(MLMProbError) as e:
        cdr_span(seq, cdr)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_truncated_vh_still_has_its_whole_cdrs():
    assert set(cdr_spans(VH[:98])) == {"H1", "H2"}
    with pytest.raises(MLMProbError, match="no CDR"):
        cdr_spans(UBIQUITIN)


def test_masked_residues_number_as_unknown_and_the_mask_follows_word_ids():
    masked = VH[:40] + "[MASK]" + VH[41:]
    wid = torch.tensor([-1] + list(range(len(VH))) + [-1])
    m = cdr_mask(masked, wid, "H3")
    assert m.nonzero()[:, 0].tolist() == list(range(97, 110))  # shifted by the CLS token
    assert cdr_mask(VH, wid, "H2").sum() == 8
    assert number(VH) is number(VH)  # cached


# -- the commands on tiny models --------------------------------------------------------------------
SPACED_VH, SPACED_VL = " ".join(VH), " ".join(VL)


def _sample(model, seq, out, *extra):
    return main(
        [
            "sample",
            "--model",
            str(model),
            "--seq",
            seq,
            "--chains",
            "1",
            "--epochs",
            "1",
            "--burn-in",
            "0",
            "--out",
            str(out),
            "--no-progress",
            "--no-plot",
            "--device",
            "cpu",
            *extra,
        ]
    )


def _fasta_seqs(out):
    return [s.replace(" ", "") for s in (out / "samples.fasta").read_text().splitlines()[1::2]]


def test_sample_cdr_frees_only_that_cdr_and_the_cdr3_alias_is_gone(tiny_bert_dir, tmp_path, capsys):
    assert _sample(tiny_bert_dir, SPACED_VL, tmp_path / "l3", "--cdr", "L3", "--method", "ancestral") == 0
    head = json.loads((tmp_path / "l3" / "run.jsonl").read_text().splitlines()[0])
    s, e = cdr_span(VL, "L3")
    assert [i - 1 for i, f in enumerate(head["free"][0]) if f] == list(range(s, e))
    (got,) = _fasta_seqs(tmp_path / "l3")
    assert got[:s] == VL[:s] and got[e:] == VL[e:]
    # --cdr H3 --numbering kabat: the 11 Kabat CDR-H3 residues; --cdr3, its former alias, is refused
    assert _sample(tiny_bert_dir, SPACED_VH, tmp_path / "b", "--cdr", "h3", "--numbering", "kabat") == 0
    head = json.loads((tmp_path / "b" / "run.jsonl").read_text().splitlines()[0])
    assert sum(head["free"][0]) == 11
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        _sample(tiny_bert_dir, SPACED_VH, tmp_path / "a", "--cdr3", "kabat")
    assert e.value.code == 2 and "unrecognized arguments: --cdr3" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--cdr", "H4"], "unknown CDR 'H4'"),
        (["--cdr", "L1", "--numbering", "kabat"], "--numbering kabat gives CDR-H3 only"),
        (["--numbering", "imgt"], "--numbering is the CDR definition of --cdr; give --cdr too"),
        (["--cdr", "H1", "--positions", "3"], "give --positions or --cdr, not both"),
        (["--cdr", "L1"], "seq1: no CDR-L1: anarcism (IMGT numbering) finds only a heavy-chain (VH) domain"),
    ],
)
def test_sample_region_errors(tiny_bert_dir, tmp_path, capsys, extra, message):
    try:
        status = _sample(tiny_bert_dir, SPACED_VH, tmp_path / "x", *extra)
    except SystemExit as e:  # argparse's own check of --cdr's value
        status = e.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_help_names_the_cdrs_and_no_alias(capsys):
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--cdr3" not in text and "alias" not in text and "{H1,H2,H3,L1,L2,L3}" in text


def test_streamed_sample_with_a_cdr_skips_what_does_not_number(tiny_bert_dir, tmp_path, capsys):
    fasta = tmp_path / "in.fasta"
    fasta.write_text(f">vl\n{SPACED_VL}\n>ubq\n{' '.join(UBIQUITIN[:30])}\n")
    out = tmp_path / "rows.jsonl"
    assert (
        main(
            [
                "sample",
                "--model",
                str(tiny_bert_dir),
                "--input",
                str(fasta),
                "--cdr",
                "L1",
                "--chains",
                "1",
                "--epochs",
                "1",
                "--burn-in",
                "0",
                "--out",
                str(out),
                "--skip-invalid",
                "--no-progress",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["record"] for r in rows] == ["vl"] and rows[0]["n_free"] == 6
    assert "ubq" in capsys.readouterr().err
    meta = json.loads((tmp_path / "rows.jsonl.meta.json").read_text())
    assert meta["config"]["cdr"] == "L1" and meta["config"]["numbering"] == "imgt"


def test_infill_cdr_is_the_gap(tiny_bert_dir, tmp_path, capsys):
    assert (
        main(
            ["infill", SPACED_VH, "--model", str(tiny_bert_dir), "--cdr", "H2", "-k", "2", "--json", "--device", "cpu"]
        )
        == 0
    )
    res = json.loads(capsys.readouterr().out)
    s, e = cdr_span(VH, "H2")
    assert res["positions"] == list(range(s + 1, e + 1)) and res["native"] == IMGT["H2"] and res["cdr"] == "H2"
    assert (
        main(["infill", SPACED_VH[:40] + " _ _", "--model", str(tiny_bert_dir), "--cdr", "H2", "--device", "cpu"]) == 2
    )
    assert "give a complete sequence" in capsys.readouterr().err
    fasta = tmp_path / "in.fasta"
    fasta.write_text(f">vh\n{SPACED_VH}\n>ubq\n{' '.join(UBIQUITIN[:30])}\n")
    out = tmp_path / "fills.jsonl"
    assert (
        main(
            [
                "infill",
                "--input",
                str(fasta),
                "--model",
                str(tiny_bert_dir),
                "--cdr",
                "H1",
                "-k",
                "2",
                "--out",
                str(out),
                "--skip-invalid",
                "--no-progress",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["vh"] and rows[0]["length"] == 8
    assert "no CDR-H1" in capsys.readouterr().err


def test_variants_saturate_cdr_mutates_only_the_region(esm_dir, tmp_path, capsys):
    out = tmp_path / "sat.jsonl"
    assert (
        main(
            [
                "variants",
                "--wild-type",
                VH,
                "--saturate",
                "--cdr",
                "H2",
                "--methods",
                "wt_marginals",
                "--model",
                str(esm_dir),
                "--out",
                str(out),
                "--no-progress",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    ids = [json.loads(x)["id"] for x in out.read_text().splitlines()]
    s, e = cdr_span(VH, "H2")
    assert len(ids) == 19 * (e - s) and {int(i[1:-1]) - 1 for i in ids} == set(range(s, e))
    rows = (tmp_path / "sat.heatmap.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == [f"{VH[i]}{i + 1}" for i in range(s, e)]
    long = list(csv.DictReader((tmp_path / "sat.saturation.csv").open()))  # position: the residue in the chain
    assert {int(r["position"]) for r in long} == set(range(s + 1, e + 1))
    assert all(int(r["position"]) == int(r["residue"]) == int(r["token_index"]) for r in long)  # ESM-2: one CLS
    capsys.readouterr()
    assert main(["variants", str(out), "--wild-type", VH, "--cdr", "H2", "--model", str(esm_dir)]) == 2
    assert "--cdr restricts --saturate" in capsys.readouterr().err


def test_app_positions_take_a_cdr(tiny_bert_dir):
    from mlmprob import load_mlm
    from mlmprob.app.dynamics import sample_steps
    from mlmprob.app.infilling import infill_compare

    mlm = load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")
    s, e = cdr_span(VH, "H1")
    snaps = list(sample_steps(mlm, SPACED_VH, positions="H1", epochs=1, chains=1))
    assert snaps[-1].free == tuple(range(s + 1, e + 1))
    res = infill_compare(mlm, SPACED_VH, "cdr-h1", beam_size=2)
    assert res.native.replace(" ", "") == IMGT["H1"] and res.numbers == tuple(range(s + 1, e + 1))
    with pytest.raises(MLMProbError, match="no CDR-L1"):
        infill_compare(mlm, SPACED_VH, "L1", beam_size=2)
