"""Messages that name the real problem: each failure is one ``error:`` line that says what is wrong (not
what a library underneath guessed), with exit status 2 for bad input and for file-system errors, whose
message names the path."""

import errno
import random

import pytest

from mlmprob.cli import main

AA = "ACDEFGHIKLMNPQRSTVWY"


@pytest.fixture
def fasta(tmp_path):
    path = tmp_path / "in.fasta"
    path.write_text(">a\nA C D E F G\n>b\nK L M N P\n")
    return path


def _error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_a_sequence_too_long_for_joints_says_so(tmp_path, capsys):
    data = tmp_path / "long.fasta"
    data.write_text(">long\n" + "".join(random.Random(0).choice(AA) for _ in range(400)) + "\n")
    assert (
        main(
            [
                "joints",
                "--model",
                "sapiens-vh",
                "--data",
                str(data),
                "--out",
                str(tmp_path / "j"),
                "--device",
                "cpu",
                "--n-pairs",
                "1",
                "--top-k",
                "4",
                "--quiet",
            ]
        )
        == 2
    )
    err = _error(capsys)
    assert "sequence 1 has 400 residues; the model accepts at most 142" in err, err


@pytest.mark.parametrize("name", ["/nonexistent/model", "./no-such-model", "runs/a/model"])
def test_a_missing_model_folder_is_not_taken_for_a_hub_id(fasta, tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    assert main(["score", str(fasta), "--model", name, "--device", "cpu", "--no-progress"]) == 2
    err = _error(capsys)
    assert f"model folder {name} does not exist" in err and "Repo id" not in err, err


def test_an_empty_model_folder_lists_the_files_it_needs(fasta, tmp_path, capsys):
    empty = tmp_path / "model"
    empty.mkdir()
    assert main(["score", str(fasta), "--model", str(empty), "--device", "cpu", "--no-progress"]) == 2
    err = _error(capsys)
    assert f"cannot load model folder {empty}: it has no model or tokenizer files" in err, err
    assert "config.json" in err and "model.safetensors" in err and "tokenizer.json" in err, err
    (empty / "config.json").write_text("{}")
    assert main(["score", str(fasta), "--model", str(empty), "--device", "cpu", "--no-progress"]) == 2
    err = _error(capsys)
    assert (
        "it lacks weights (model.safetensors" in err and "tokenizer files" in err and "lacks config.json" not in err
    ), err


def test_out_naming_a_folder_says_it_is_a_folder(fasta, tiny_bert_dir, tmp_path, capsys):
    folder = tmp_path / "res.jsonl"
    folder.mkdir()
    for extra in ([], ["--resume"]):
        assert (
            main(
                [
                    "score",
                    str(fasta),
                    "--model",
                    str(tiny_bert_dir),
                    "--out",
                    str(folder),
                    "--no-progress",
                    "--device",
                    "cpu",
                    *extra,
                ]
            )
            == 2
        )
        err = _error(capsys)
        assert "is a folder" in err and "--resume" not in err, err


def test_disk_full_names_the_file_with_status_2(fasta, tiny_bert_dir, tmp_path, capsys, monkeypatch):
    import mlmprob.runtime.log as log

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    out = tmp_path / "o.jsonl"
    monkeypatch.setattr(log.os, "fsync", full)
    assert (
        main(
            ["score", str(fasta), "--model", str(tiny_bert_dir), "--out", str(out), "--no-progress", "--device", "cpu"]
        )
        == 2
    )
    err = _error(capsys)
    assert err == f"error: cannot read or write {out}: No space left on device", err


def test_a_file_system_error_is_status_2_with_its_path(fasta, tiny_bert_dir, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "o.jsonl"  # its folder is a file
    assert (
        main(
            ["score", str(fasta), "--model", str(tiny_bert_dir), "--out", str(out), "--no-progress", "--device", "cpu"]
        )
        == 2
    )
    assert str(blocker) in _error(capsys)


def test_help_shows_one_truthful_default(capsys):
    for command in ("score", "sample", "variants", "joints", "infill", "calibrate"):
        with pytest.raises(SystemExit) as e:
            main([command, "--help"])
        assert e.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "(default: None)" not in text, command
        start = text.index("--batch-tokens BATCH_TOKENS ")
        block = text[start : text.index("--", start + 30)]
        assert block.count("default") == 1 and "on CPUs" in block, block


def test_resuming_another_commands_output_names_both_commands(fasta, tiny_bert_dir, tmp_path, capsys):
    """``design``/``infill``/``variants --resume`` on a ``score`` output said the weights or the input changed."""
    out = tmp_path / "scores.jsonl"
    model = ["--model", str(tiny_bert_dir), "--device", "cpu", "--no-progress"]
    assert main(["score", str(fasta), *model, "--out", str(out)]) == 0
    capsys.readouterr()
    before = out.read_bytes()
    gaps = tmp_path / "gaps.txt"
    gaps.write_text("AC___F\n")
    for argv in (["design", "ACDEFG", "--chains", "1", "--steps", "1"], ["infill", "--input", str(gaps)]):
        assert main([*argv, *model, "--out", str(out), "--resume"]) == 2
        assert _error(capsys) == (
            f"error: cannot resume {out}: it holds results of mlmprob score, not of mlmprob {argv[0]}; "
            "choose another --out"
        )
    assert out.read_bytes() == before


@pytest.mark.parametrize("where", ["folder", "under-a-file"])
def test_calibrate_refuses_an_unwritable_out_before_the_fit(fasta, tiny_bert_dir, tmp_path, capsys, where):
    """An --out that is a folder was a safetensors traceback after the whole fit."""
    if where == "folder":
        out = tmp_path / "c.safetensors"
        out.mkdir()
        expect = f"error: --out {str(out)!r} is a folder; give a file path ending in .safetensors"
    else:
        out = fasta / "c.safetensors"
        expect = f"error: --out {str(out)!r}: {str(fasta)!r} is a file, not a folder"
    argv = ["calibrate", str(fasta), "--model", str(tiny_bert_dir), "--device", "cpu", "--steps", "1"]
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == expect and "calibration sequences read" not in err, err
