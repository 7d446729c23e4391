"""Issue 49 (red team, third round), items 6 and 7: sizes checked before anything is built (a gap of a billion
masks, a line without a newline), and the last tracebacks (deeply nested JSON, ``--device meta``, a closed
standard output) made one ``error:`` line with exit status 2."""

import gzip
import os
import subprocess
import sys
import tracemalloc

import pytest

from mlmprob import defaults
from mlmprob.cli import main
from mlmprob.runtime.inputs import iter_records

AB = "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSY"


def _error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _cpu(model) -> list[str]:
    return ["--model", str(model), "--device", "cpu"]


# -- item 6: a gap's length is checked before the gap is written out ------------------------------------------------
@pytest.mark.parametrize("count", ["999999999999999", "9" * 5000])
def test_a_gap_of_absurd_length_is_refused_before_it_is_built(tiny_bert_dir, capsys, count):
    assert main(["infill", f"EVQLV[MASK]x{count}GG", *_cpu(tiny_bert_dir)]) == 2
    err = _error(capsys)
    assert "a gap of" in err and f"{defaults.MAX_INPUT_LINE:,} tokens at most" in err, err


def test_a_gap_longer_than_the_model_reads_names_its_maximum(capsys):
    assert main(["infill", "EVQLV[MASK]x1000GG", *_cpu("sapiens-vh")]) == 2
    err = _error(capsys)
    assert "a gap of 1,000 tokens" in err and "longer than the model reads (144 tokens at most)" in err, err


def test_a_streamed_record_with_an_absurd_gap_is_one_skipped_unit(tiny_bert_dir, tmp_path, capsys):
    src = tmp_path / "g.txt"
    src.write_text("EVQLV[MASK]x99999999999999GG\nEV__LV\n")
    out = tmp_path / "o.jsonl"
    args = ["infill", "--input", str(src), *_cpu(tiny_bert_dir), "--no-progress", "--out", str(out)]
    assert main([*args, "--skip-invalid", "--beam-size", "2"]) == 0
    assert "skipped 'line1': a gap of 99,999,999,999,999 tokens" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 1


# -- item 6: a line is read in pieces of at most MAX_INPUT_LINE bytes -----------------------------------------------
def test_a_file_without_a_newline_is_refused_naming_the_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(defaults, "MAX_INPUT_LINE", 1 << 20)
    src = tmp_path / "one.txt"
    src.write_text(AB + "\n" + "A" * (3 << 20))  # 3 MB, no newline
    assert main(["score", str(src), *_cpu("sapiens-vh"), "--no-progress"]) == 2
    err = _error(capsys)
    assert f"{src}: line 2 is longer than 1,048,576 bytes" in err, err


@pytest.mark.parametrize("packed", [False, True])
def test_a_long_line_is_never_held_whole(tmp_path, monkeypatch, packed):
    monkeypatch.setattr(defaults, "MAX_INPUT_LINE", 1 << 20)
    src = tmp_path / ("big.txt.gz" if packed else "big.txt")
    data = b"A" * (24 << 20)
    if packed:
        with gzip.open(src, "wb") as f:
            f.write(data)
    else:
        src.write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(Exception, match="line 1 is longer than 1,048,576 bytes"):
            list(iter_records(src, "text"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak  # the 24 MB line was never read whole


def test_a_fasta_record_longer_than_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(defaults, "MAX_INPUT_LINE", 1000)
    src = tmp_path / "r.fasta"
    src.write_text(">ok\nACDE\n>huge\n" + ("A" * 60 + "\n") * 20)
    with pytest.raises(Exception, match=r"r.fasta: line \d+: record 'huge' is longer than 1,000 characters"):
        list(iter_records(src))


def test_a_line_at_the_limit_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(defaults, "MAX_INPUT_LINE", 100)
    src = tmp_path / "ok.txt"
    src.write_text("A" * 99 + "\n" + "C" * 100)
    assert [len(r.seq) for r in iter_records(src)] == [99, 100]


# -- item 7: JSON nested too deeply ---------------------------------------------------------------------------------
@pytest.mark.parametrize("line", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_a_deeply_nested_jsonl_line_is_one_line(tmp_path, capsys, line):
    src = tmp_path / "n.jsonl"
    src.write_text('{"sequence": "ACDE"}\n' + line + "\n")
    assert main(["score", str(src), *_cpu("sapiens-vh"), "--no-progress"]) == 2
    assert f"{src}: line 2 is nested too deeply" in _error(capsys)


# -- item 7: devices mlmprob does not run on ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "option", [["--device", "meta"], ["--device", "xla"], ["--devices", "meta"], ["--devices", "cpu,xla"]]
)
def test_an_unsupported_device_is_refused_naming_the_option(tmp_path, capsys, option):
    src = tmp_path / "a.fasta"
    src.write_text(f">a\n{AB}\n")
    with pytest.raises(SystemExit) as e:
        main(["score", str(src), "--model", "sapiens-vh", "--no-progress", *option])
    assert e.value.code == 2
    err = _error(capsys)
    assert f"argument {option[0]}" in err and repr(option[1].split(",")[-1]) in err, err


# -- item 7: standard output closed -----------------------------------------------------------------------------------
def _closed_stdout(args: list[str], tmp_path):
    cmd = " ".join([sys.executable, "-m", "mlmprob", *args])
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(["sh", "-c", f"exec {cmd} >&-"], capture_output=False, stderr=subprocess.PIPE,
                          text=True, env=env, cwd=tmp_path, timeout=300)  # fmt: skip


def test_scoring_to_a_closed_stdout_is_one_line(tiny_bert_dir, tmp_path):
    (tmp_path / "ok.fasta").write_text(f">a\n{AB}\n")
    r = _closed_stdout(["score", "ok.fasta", *_cpu(tiny_bert_dir), "--no-progress"], tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith("error: standard output is closed"), r.stderr


def test_a_closed_stdout_does_not_stop_a_run_that_writes_a_file(tiny_bert_dir, tmp_path):
    (tmp_path / "ok.fasta").write_text(f">a\n{AB}\n>b\nACDEFGHIKL\n")
    r = _closed_stdout(["score", "ok.fasta", *_cpu(tiny_bert_dir), "--no-progress", "--out", "o.jsonl"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 2
