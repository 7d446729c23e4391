import pytest
from conftest import shared_data_file

from mlmprob import MLMProbError
from mlmprob.data import read_records, shared_data_dir


def test_readers(tmp_path):
    (tmp_path / "a.txt").write_text("ACD\n\n  EFG \n")
    assert [(r.id, r.seq) for r in read_records(tmp_path / "a.txt")] == [("line1", "ACD"), ("line3", "EFG")]
    (tmp_path / "a.fasta").write_text(">x desc\nAC\nDE\n>y\nKL\n")
    assert [(r.id, r.seq) for r in read_records(tmp_path / "a.fasta")] == [("x", "ACDE"), ("y", "KL")]
    (tmp_path / "a.csv").write_text("name,HC\nab1,ACD\nab2,\nab3,KLM\n")
    # an empty cell is a record with an empty sequence, like an empty FASTA record (issue 27: it vanished
    # without a count); the tokenizer names it, --skip-invalid counts it
    assert [(r.id, r.seq) for r in read_records(tmp_path / "a.csv", column="HC", id_column="name")] == [
        ("ab1", "ACD"),
        ("ab2", ""),
        ("ab3", "KLM"),
    ]
    (tmp_path / "a.tsv").write_text("HC\tx\nAC\t1\n")
    assert [r.seq for r in read_records(tmp_path / "a.tsv", column="HC")] == ["AC"]


def test_reader_errors(tmp_path):
    (tmp_path / "a.csv").write_text("name,HC\nab1,ACD\n")
    with pytest.raises(MLMProbError, match="--column.*columns: name, HC"):
        read_records(tmp_path / "a.csv")
    with pytest.raises(MLMProbError, match="column 'LC' not in a.csv"):
        read_records(tmp_path / "a.csv", column="LC")
    with pytest.raises(MLMProbError, match="does not exist"):
        read_records(tmp_path / "nope.txt")
    (tmp_path / "b.fa").write_text("ACD\n>x\nAC\n")
    with pytest.raises(MLMProbError, match="not FASTA"):
        read_records(tmp_path / "b.fa")


def test_shared_data_is_found():
    want = shared_data_file("antibody/thera_sabdab.csv")  # skips, naming the file, in a clone without it
    d = shared_data_dir()
    assert d is not None and (d / "antibody" / "thera_sabdab.csv").exists(), (d, want)


def test_shared_data_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMPROB_DATA", str(tmp_path))
    assert shared_data_dir() == tmp_path.resolve()
