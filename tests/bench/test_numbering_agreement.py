"""bench/numbering_agreement.py on a three-row CSV in the Thera-SAbDab layout: the counts, the kinds of
CDR-H3 disagreement and the command line in the report; a missing data folder is a clean skip."""

from tests.conftest import load_bench

VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    "WGGDGFYAMDYWGQGTLVTVSS"
)
VL = "DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSGSRSGTDFTLTISSLQPEDFATYYCQQHYTTPPTFGQGTKVEIK"


def test_report_on_a_small_csv(tmp_path, capsys):
    mod = load_bench("numbering_agreement")
    (tmp_path / "antibody").mkdir()
    rows = [
        ("Tras", VH, VL),
        ("Cut", VH[:100], "na"),
        ("Ubq", "MQIFVKTLTGKTITLEVEPSDTIENVKAKIQDKEGIPPDQQRLIFAGKQ", "na"),
    ]
    (tmp_path / "antibody" / "thera_sabdab.csv").write_text(
        "Therapeutic,HC,LC\n" + "".join(f"{n},{h},{lc}\n" for n, h, lc in rows)
    )
    out = tmp_path / "numbering.md"
    assert mod.main(["--data", str(tmp_path), "--out", str(out)]) == 0
    text = out.read_text()
    assert "Exact agreement: **1 of 3** heavy chains" in text
    assert "| heavy | 3 | 2 | 2 / 2 / 1 |" in text and "| light | 1 | 1 | 1 / 1 / 1 |" in text
    assert "| neither finds a CDR-H3 | 1 |" in text and "| library: CDR-H3 cut by the sequence's end | 1 |" in text
    assert f"bench/numbering_agreement.py --data {tmp_path} --out {out}" in text
    capsys.readouterr()


def test_skips_without_the_data(tmp_path, capsys):
    mod = load_bench("numbering_agreement")
    assert mod.main(["--data", str(tmp_path), "--out", str(tmp_path / "x.md")]) == 0
    assert "skipped" in capsys.readouterr().err and not (tmp_path / "x.md").exists()
