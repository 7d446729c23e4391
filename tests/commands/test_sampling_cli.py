"""``mlmprob sample`` end to end on a tiny random BERT saved to a temporary folder."""

import json

import pytest

from mlmprob.cli import main

TRASTUZUMAB_VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    "WGGDGFYAMDYWGQGTLVTVSS"
)


def test_cli_samples_cdr_h3_only_and_resumes(tiny_bert_dir, tmp_path, capsys):
    seq = " ".join(TRASTUZUMAB_VH)  # the word-level test tokenizer needs one residue per word
    out = tmp_path / "run"
    argv = [
        "sample",
        "--model",
        str(tiny_bert_dir),
        "--seq",
        seq,
        "--cdr",
        "H3",
        "--numbering",
        "kabat",
        "--chains",
        "2",
        "--epochs",
        "2",
        "--burn-in",
        "1",
        "--block-size",
        "3:1",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["chains"] == 2 and summary["epochs"] == 3
    assert json.loads((out / "summary.json").read_text()) == summary
    # the summary's numbers from the raw epoch records of run.jsonl (epoch 0 is the burn-in)
    recs = [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()[1:]]
    post = recs[1:]
    assert summary["accept_rate"] == pytest.approx(
        sum(map(sum, (r["accepted"] for r in post))) / sum(map(sum, (r["proposals"] for r in post)))
    )
    assert summary["novel_rate"] == pytest.approx(
        sum(map(sum, (r["novel"] for r in post))) / sum(map(sum, (r["proposals"] for r in post)))
    )
    assert summary["final_energy_mean"] == pytest.approx(sum(recs[-1]["e_local"]) / 2)
    assert summary["final_identity_mean"] == pytest.approx(sum(recs[-1]["identity"]) / 2)
    # 11 CDR-H3 positions in blocks of 3, 2, 1 (the 3:1 schedule over 3 sweeps): 4 + 6 + 11 per chain
    assert [r["block_size"] for r in recs] == [3, 2, 1] and summary["proposals"] == 2 * (4 + 6 + 11)
    for name in ("run.jsonl", "samples.fasta", "summary.json", "trace.png"):
        assert (out / name).exists(), name
    lines = (out / "samples.fasta").read_text().splitlines()
    assert len(lines) == 2 * 2 * 2
    last = [h for h in lines[::2] if " epoch=2 " in h]
    assert [f"e_local={recs[-1]['e_local'][b]:.4f}" in h for b, h in enumerate(last)] == [True, True]
    cdr = slice(98, 109)  # Kabat CDR-H3 residues of trastuzumab
    for s in lines[1::2]:
        res = s.replace(" ", "")
        assert len(res) == len(TRASTUZUMAB_VH)
        assert res[: cdr.start] == TRASTUZUMAB_VH[: cdr.start] and res[cdr.stop :] == TRASTUZUMAB_VH[cdr.stop :]
    n_lines = len((out / "run.jsonl").read_text().splitlines())
    assert main(argv) == 0  # a finished run is resumed, not repeated
    assert len((out / "run.jsonl").read_text().splitlines()) == n_lines
    assert main(argv[:-3] + ["--top-p", "0.5", "--out", str(out)]) == 2  # other settings: clear error
    assert "top_p" in capsys.readouterr().err


def test_cli_input_errors(tiny_bert_dir, tmp_path, capsys):
    base = ["sample", "--model", str(tiny_bert_dir), "--out", str(tmp_path / "x"), "--no-progress", "--epochs", "1"]
    assert main(base) == 2
    assert "no input" in capsys.readouterr().err
    assert main(base + ["--seq", "A C D", "--positions", "7"]) == 2
    assert "outside" in capsys.readouterr().err
    assert main(base + ["--seq", "A C D", "--cdr", "H3"]) == 2
    assert "CDR-H3" in capsys.readouterr().err
