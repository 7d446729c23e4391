"""``mlmprob score`` end to end on the fast embedded model (sapiens-vh)."""

import json
import subprocess
import sys

import pytest

from mlmprob.cli import main

VH = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYAMDYWGQGTLVTVSS"


@pytest.fixture
def fasta(tmp_path):
    p = tmp_path / "in.fasta"
    p.write_text(f">a\n{VH}\n>b\n{VH[:50]}\n>c\n{VH[20:90]}\n")
    return p


def test_score_jsonl_tsv_and_per_token(fasta, tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert main(["score", str(fasta), "--model", "sapiens-vh", "--out", str(out), "--per-token", "--no-progress"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    for r in rows:
        assert len(r["tokens"]) == r["n_tokens"] == len(r["sequence"])
        assert r["pll"] == pytest.approx(sum(r["token_log_prob"]), abs=1e-6)
        assert r["e_raw"] == pytest.approx(-sum(r["token_raw"]), abs=1e-4)
        assert -3.0 < r["pll_per_token"] < -0.05
    tsv = tmp_path / "s.tsv"
    assert main(["score", str(fasta), "--model", "sapiens-vh", "--out", str(tsv), "--no-progress"]) == 0
    lines = tsv.read_text().splitlines()
    assert lines[0].split("\t") == ["id", "n_tokens", "pll", "pll_per_token", "e_local", "e_raw"]
    assert float(lines[1].split("\t")[2]) == pytest.approx(rows[0]["pll"], abs=1e-6)


def test_score_resumes_without_redoing_work(fasta, tmp_path):
    out = tmp_path / "s.jsonl"
    assert main(["score", str(fasta), "--model", "sapiens-vh", "--out", str(out), "--limit", "2", "--no-progress"]) == 0
    first = out.read_text().splitlines()
    with out.open("a") as f:  # a run killed mid-line
        f.write('{"id": "c", "seq')
    assert main(["score", str(fasta), "--model", "sapiens-vh", "--out", str(out), "--resume", "--no-progress"]) == 0
    lines = out.read_text().splitlines()
    assert lines[:2] == first and [json.loads(x)["id"] for x in lines] == ["a", "b", "c"]
    assert main(["score", str(fasta), "--model", "sapiens-vh", "--out", str(out)]) == 2  # refuses to overwrite


def test_score_csv_column(tmp_path, capsys):
    p = tmp_path / "abs.csv"
    p.write_text(f"name,HC\nx,{VH[:30]}\ny,\n")
    # an empty cell is an error naming its record (issue 27: it vanished without a count), or a counted skip
    assert main(["score", str(p), "--column", "HC", "--id-column", "name", "--model", "sapiens-vh"]) == 2
    assert "record 'y': is empty" in capsys.readouterr().err
    assert (
        main(["score", str(p), "--column", "HC", "--id-column", "name", "--model", "sapiens-vh", "--skip-invalid"]) == 0
    )
    io = capsys.readouterr()
    out = [json.loads(x) for x in io.out.splitlines()]
    assert [r["id"] for r in out] == ["x"] and "warning: skipped record 'y'" in io.err


@pytest.mark.parametrize(
    "content,args,msg",
    [
        (">a\nACDXXE\n", [], "error: record 'a': has symbol 'X' at residue 4"),
        (">a\n" + "A" * 200 + "\n", [], "at most 142"),
        ("", [], "no sequences found"),
        (">a\nACD\n", ["--out", "x.tsv", "--per-token"], "needs JSONL"),
        (">a\nACD\n", ["--model", "nonexistent-model-q"], "cannot load 'nonexistent-model-q'"),
    ],
)
def test_score_errors_are_one_line(tmp_path, capsys, content, args, msg):
    p = tmp_path / "in.fasta"
    p.write_text(content)
    argv = ["score", str(p), "--model", "sapiens-vh"] + args
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and err.startswith("error: ") and len(err.splitlines()) == 1


def test_entry_point_runs():
    r = subprocess.run(
        [sys.executable, "-m", "mlmprob.cli", "score", "/nonexistent.fa"], capture_output=True, text=True
    )
    assert r.returncode == 2 and r.stderr.strip() == "error: input file '/nonexistent.fa' does not exist"
