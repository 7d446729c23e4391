"""``--data DIR`` of every experiment that reads data: the shared folder by default, and absent data is one
clear line naming the file and the option (exit 2), before any model is loaded."""

import pytest

from experiments import cdr_h3, english, english_corpus
from experiments import infill_pivots as pivots
from experiments import infill_runner as runner
from experiments.data_option import resolve_data_dir
from mlmprob.errors import MLMProbError


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "--data DIR" in err[0], err
    return err[0]


def test_resolve_data_dir_names_what_is_missing(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("x")
    assert resolve_data_dir(tmp_path, ["a.txt"]) == tmp_path
    with pytest.raises(MLMProbError, match=r"b\.txt not found: pass --data DIR, the folder holding a\.txt, b\.txt"):
        resolve_data_dir(tmp_path, ["a.txt", "b.txt"])
    with pytest.raises(MLMProbError, match="nowhere does not exist: pass --data DIR"):
        resolve_data_dir(tmp_path / "nowhere", ["a.txt"])
    monkeypatch.setattr("mlmprob.data.shared_data_dir", lambda: None)
    with pytest.raises(MLMProbError, match="no shared data folder found.*pass --data DIR, the folder holding a.txt"):
        resolve_data_dir(None, ["a.txt"])


@pytest.mark.parametrize("name", ["cdr_h3", "english", "english_corpus", "runner", "pivots"])
def test_absent_data_is_one_line_naming_file_and_option(name, tmp_path, capsys):
    out = str(tmp_path / "out")
    argv, needed = {
        "cdr_h3": (["--model", "never-loaded", "--out", out, "--data", str(tmp_path)], "antibody/thera_sabdab.csv"),
        "english": (["evaluate", "--model", "never-loaded", "--out", out, "--data", str(tmp_path)], "snli_test.tsv"),
        "english_corpus": (["--data", str(tmp_path), "--out", out], "brown.zip"),
        "runner": (["--models", "never-loaded", "--out", out + ".jsonl", "--data", str(tmp_path)], "GDPa1_v1.2.csv"),
        "pivots": (["--model", "never-loaded", "--out", out + ".jsonl", "--data", str(tmp_path)], "GDPa1_v1.2.csv"),
    }[name]
    main = {
        "cdr_h3": cdr_h3.main,
        "english": english.main,
        "english_corpus": english_corpus.main,
        "runner": runner.main,
        "pivots": pivots.main,
    }[name]
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert str(tmp_path) in line and needed in line and "never-loaded" not in line


@pytest.mark.parametrize(
    "main, argv",
    [
        (cdr_h3.main, ["--model", "never-loaded", "--out", "unused"]),
        (english_corpus.main, ["--out", "unused"]),
        (runner.main, ["--models", "never-loaded", "--out", "unused.jsonl"]),
    ],
)
def test_no_shared_folder_and_no_data_option(main, argv, monkeypatch, capsys):
    monkeypatch.setattr("mlmprob.data.shared_data_dir", lambda: None)
    assert main(argv) == 2
    assert "no shared data folder found" in _one_error_line(capsys)


def test_data_defaults_to_the_shared_folder_and_the_old_spellings_still_work(tmp_path, monkeypatch):
    monkeypatch.setattr("mlmprob.data.shared_data_dir", lambda: tmp_path)
    assert cdr_h3.build_parser().parse_args(["--model", "m", "--out", "o"]).data == str(tmp_path)
    # cdr_h3 takes a folder (its antibody/thera_sabdab.csv) or, as before, a CSV file
    csv = tmp_path / "abs.csv"
    csv.write_text("Therapeutic,HC\n")
    assert cdr_h3.antibody_csv(csv) == csv
    (tmp_path / "antibody").mkdir()
    (tmp_path / "antibody" / "thera_sabdab.csv").write_text("Therapeutic,HC\n")
    assert cdr_h3.antibody_csv(tmp_path) == cdr_h3.antibody_csv(None) == tmp_path / "antibody" / "thera_sabdab.csv"
