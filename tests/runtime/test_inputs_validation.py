"""Inputs are taken for what they are (issue 27): repeated ids, ids a TSV cannot keep, placeholders and lower
case for residue models, empty cells, inline wild types, pipes and standard input, output suffixes, binary
text, block sizes. In process (``mlmprob.cli.main``) on the tiny models of conftest, except where a real pipe
is the point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mlmprob.cli import main
from mlmprob.errors import MLMProbError, TokenizationError
from mlmprob.runtime.inputs import iter_records, spool_input
from mlmprob.runtime.unique import unique_ids

pytestmark = pytest.mark.usefixtures("one_thread")
AA = "ACDEFGHIKLMNPQRSTVWY"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _seq(i: int, n: int = 8) -> str:
    return "".join(AA[(i * 7 + k * 3) % 20] for k in range(n))


def _fasta(path: Path, ids) -> Path:
    path.write_text("".join(f">{rid}\n{_seq(i)}\n" for i, rid in enumerate(ids)))
    return path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith("error: ") and "Traceback" not in "\n".join(err)
    return err[-1]


def _score(model, *argv) -> int:
    return main(["score", *map(str, argv), "--model", str(model), "--no-progress"])


# -- 1. repeated ids ---------------------------------------------------------------------------------
def test_unique_ids_streams_and_names_both_records():
    from mlmprob.runtime.inputs import Record

    recs = [Record("a", "AC"), Record("b", "DE"), Record("a", "KL"), Record("b", "MN")]
    with pytest.raises(MLMProbError, match=r"duplicate id 'a': records 1 and 3"):
        list(unique_ids(recs))
    assert [r.seq for r in unique_ids(recs, dedupe=True)] == ["AC", "DE"]


def test_duplicate_ids_refused_by_every_reading_command(tiny_bert_dir, tmp_path, capsys):
    fa = _fasta(tmp_path / "dup.fasta", ["a", "b", "a"])
    assert _score(tiny_bert_dir, fa, "--out", tmp_path / "s.jsonl") == 2
    assert "duplicate id 'a': records 1 and 3" in _error(capsys)
    assert (
        main(
            [
                "sample",
                "--input",
                str(fa),
                "--model",
                str(tiny_bert_dir),
                "--epochs",
                "1",
                "--chains",
                "1",
                "--out",
                str(tmp_path / "x.jsonl"),
                "--no-progress",
            ]
        )
        == 2
    )
    assert "duplicate id 'a'" in _error(capsys)
    gaps = tmp_path / "gaps.fasta"
    gaps.write_text(">g\nAC__DE\n>h\nKL_M\n>g\nAC_D\n")
    assert main(["infill", "--input", str(gaps), "--model", str(tiny_bert_dir), "-k", "2", "--no-progress"]) == 2
    assert "duplicate id 'g': records 1 and 3" in _error(capsys)
    dms = tmp_path / "dms.csv"
    dms.write_text("mutant\nA1C\nC2D\nA1C\n")
    assert (
        main(
            [
                "variants",
                str(dms),
                "--wild-type",
                "ACDEFG",
                "--model",
                str(tiny_bert_dir),
                "--methods",
                "wt_marginals",
                "--no-progress",
            ]
        )
        == 2
    )
    assert "duplicate id 'A1C': rows 1 and 3" in _error(capsys)


def test_dedupe_keeps_the_first_and_resumes_and_merges_like_a_plain_run(tiny_bert_dir, tmp_path, capsys):
    ids = [f"r{i}" for i in range(20)]
    plain = _fasta(tmp_path / "plain.fasta", ids)
    dup = tmp_path / "dup.fasta"
    dup.write_text(plain.read_text() + f">r3\n{_seq(40)}\n>r7\n{_seq(41)}\n")  # two repeats at the end
    assert _score(tiny_bert_dir, plain, "--out", tmp_path / "plain.jsonl") == 0
    want = {r["id"]: r["pll"] for r in _rows(tmp_path / "plain.jsonl")}
    capsys.readouterr()

    out = tmp_path / "d.jsonl"
    assert _score(tiny_bert_dir, dup, "--dedupe", "--out", out) == 0
    err = capsys.readouterr().err
    assert "warning: --dedupe dropped 2 record(s) repeating an earlier id (first: 'r3', record 21)" in err
    assert {r["id"]: r["pll"] for r in _rows(out)} == pytest.approx(want)

    lines = out.read_text().splitlines(keepends=True)  # a run killed after 16 committed rows
    out.write_text("".join(lines[:16]))
    assert _score(tiny_bert_dir, dup, "--dedupe", "--out", out, "--resume") == 0
    rows = _rows(out)
    assert len(rows) == 20 and {r["id"]: r["pll"] for r in rows} == pytest.approx(want)

    parts = [tmp_path / f"p{i}.jsonl" for i in (1, 2)]
    for i, part in enumerate(parts, 1):
        assert _score(tiny_bert_dir, dup, "--dedupe", "--shard", f"{i}/2", "--out", part) == 0
    assert main(["merge", *map(str, parts), "--out", str(tmp_path / "m.jsonl")]) == 0
    assert {r["id"]: r["pll"] for r in _rows(tmp_path / "m.jsonl")} == pytest.approx(want)


# -- 2. ids a TSV cannot keep ------------------------------------------------------------------------
def test_tsv_refuses_ids_with_tabs_and_jsonl_resumes_them(tiny_bert_dir, tmp_path, capsys):
    import csv

    inp = tmp_path / "ids.csv"
    with inp.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "seq"])
        for i, rid in enumerate(["plain", "tab\there", "new\nline", "last"]):
            w.writerow([rid, _seq(i)])
    args = ("--column", "seq", "--id-column", "name")
    assert _score(tiny_bert_dir, inp, *args, "--out", tmp_path / "x.tsv") == 2
    assert "id 'tab\\there' holds a tab or line break" in _error(capsys)

    out = tmp_path / "x.jsonl"
    assert _score(tiny_bert_dir, inp, *args, "--out", out) == 0
    out.write_text("".join(out.read_text().splitlines(keepends=True)[:2]))
    assert _score(tiny_bert_dir, inp, *args, "--out", out, "--resume") == 0
    assert [r["id"] for r in _rows(out)] == ["plain", "tab\there", "new\nline", "last"]


# -- 3. placeholders, lower case and empty cells -----------------------------------------------------
@pytest.mark.parametrize("cell", ["na", "NA", "N/A", "nan", "none", "null", "-", "evqlv"])
def test_residue_models_refuse_placeholders_and_lower_case(tiny_bert_dir, tmp_path, capsys, cell):
    inp = tmp_path / "t.csv"
    inp.write_text(f"name,HC\nok,{_seq(0)}\nbad,{cell}\nok2,{_seq(1)}\n")
    assert _score(tiny_bert_dir, inp, "--column", "HC", "--id-column", "name") == 2
    line = _error(capsys)
    assert "record 'bad'" in line and ("placeholder" in line or "lower-case" in line)
    assert _score(tiny_bert_dir, inp, "--column", "HC", "--id-column", "name", "--skip-invalid") == 0
    io = capsys.readouterr()
    assert [json.loads(x)["id"] for x in io.out.splitlines()] == ["ok", "ok2"]
    assert "warning: skipped record 'bad'" in io.err


def test_english_tokenizers_read_lower_case_and_placeholder_words(tmp_path):
    import transformers

    from mlmprob.models.tokenizers import HFTokenizer

    (tmp_path / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "na", "none", "null"]) + "\n"
    )
    tok = HFTokenizer(transformers.BertTokenizer(str(tmp_path / "vocab.txt")))
    assert tok.encode(["the cat", "none", "na"]).input_ids.shape[0] == 3


def test_residue_tokenizer_names_lower_case():
    from conftest import tiny_tokenizer

    with pytest.raises(TokenizationError, match="lower-case 'c' at residue 2"):
        tiny_tokenizer().encode(["AcD"])


@pytest.mark.parametrize("kind", ["csv", "jsonl", "fasta"])
def test_empty_records_are_errors_or_counted_skips(tiny_bert_dir, tmp_path, capsys, kind):
    text = {
        "csv": f"id,seq\na,{_seq(0)}\nb,\nc,{_seq(1)}\n",
        "jsonl": f'{{"id": "a", "seq": "{_seq(0)}"}}\n{{"id": "b", "seq": ""}}\n{{"id": "c", "seq": "{_seq(1)}"}}\n',
        "fasta": f">a\n{_seq(0)}\n>b\n>c\n{_seq(1)}\n",
    }[kind]
    inp = tmp_path / f"e.{kind}"
    inp.write_text(text)
    cols = ["--column", "seq", "--id-column", "id"] if kind == "csv" else []
    assert [
        r.id
        for r in iter_records(inp, column="seq" if kind == "csv" else None, id_column="id" if kind == "csv" else None)
    ] == ["a", "b", "c"]
    assert _score(tiny_bert_dir, inp, *cols) == 2
    assert "record 'b'" in _error(capsys)
    assert _score(tiny_bert_dir, inp, *cols, "--skip-invalid") == 0
    io = capsys.readouterr()
    assert [json.loads(x)["id"] for x in io.out.splitlines()] == ["a", "c"]
    assert "warning: skipped record 'b'" in io.err


# -- 4. --wild-type and --methods --------------------------------------------------------------------
def test_long_inline_wild_type_is_a_sequence_not_a_path(tiny_bert_dir, tmp_path, capsys):
    from mlmprob.variants.units import read_wild_type

    wt = (AA * 15)[:300]
    assert read_wild_type(wt) == wt
    dms = tmp_path / "dms.csv"
    dms.write_text("mutant\nA1C\nC2D\n")
    out = tmp_path / "v.jsonl"
    assert (
        main(
            [
                "variants",
                str(dms),
                "--wild-type",
                wt,
                "--model",
                str(tiny_bert_dir),
                "--methods",
                "wt_marginals",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    assert [r["id"] for r in _rows(out)] == ["A1C", "C2D"]


def test_wild_type_file_with_two_records_and_empty_methods_are_errors(tiny_bert_dir, tmp_path, capsys):
    dms = tmp_path / "dms.csv"
    dms.write_text("mutant\nA1C\n")
    two = _fasta(tmp_path / "wt.fasta", ["one", "two"])
    base = ["variants", str(dms), "--model", str(tiny_bert_dir), "--no-progress"]
    assert main([*base, "--wild-type", str(two)]) == 2
    assert "holds more than one sequence ('one', 'two'" in _error(capsys)
    with pytest.raises(SystemExit) as usage:  # refused by the flag itself (its field's parse function): exit 2
        main([*base, "--wild-type", "ACDEFG", "--methods", ""])
    assert usage.value.code == 2
    assert "--methods: must name one or more methods" in _error(capsys)
    assert main([*base, "--wild-type", "acdefg"]) == 2
    assert "lower-case" in _error(capsys)


# -- 5. standard input, pipes and FIFOs ---------------------------------------------------------------
def _cli(*argv, data: bytes):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "mlmprob", *map(str, argv)], input=data, capture_output=True, env=env, timeout=300
    )


def test_standard_input_is_read_once(tiny_bert_dir, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    fa = _fasta(tmp_path / "s.fasta", ["a", "b", "c"])
    with ThreadPoolExecutor(3) as pool:  # three independent processes, side by side (the second core)
        runs = [
            pool.submit(lambda a: _cli(*a[0], data=a[1]), a)
            for a in [
                (("score", "-", "--format", "fasta", "--model", tiny_bert_dir), fa.read_bytes()),
                (("score", "/dev/stdin", "--model", tiny_bert_dir), fa.read_bytes()),  # a pipe by name, sniffed
                (("score", "-", "--model", tiny_bert_dir), b"ACDE\nKLMN\n"),
            ]
        ]  # no --format, not sniffable
    r = runs[0].result()
    assert r.returncode == 0, r.stderr.decode()
    assert [json.loads(x)["id"] for x in r.stdout.decode().splitlines()] == ["a", "b", "c"]
    r = runs[1].result()
    assert r.returncode == 0, r.stderr.decode()
    assert [json.loads(x)["id"] for x in r.stdout.decode().splitlines()] == ["a", "b", "c"]
    r = runs[2].result()
    assert r.returncode == 2 and r.stderr.decode().strip().splitlines()[-1].startswith("error: standard input")
    assert "--format" in r.stderr.decode()


def test_a_fifo_is_read_once(tiny_bert_dir, tmp_path, capsys):
    fa = _fasta(tmp_path / "s.fasta", ["a", "b", "c"])
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(fa.read_bytes())

    t = threading.Thread(target=feed)
    t.start()
    try:
        assert _score(tiny_bert_dir, fifo) == 0  # no --format: '>' makes it FASTA
    finally:
        t.join(timeout=60)
    assert [json.loads(x)["id"] for x in capsys.readouterr().out.splitlines()] == ["a", "b", "c"]


def test_iter_records_reads_standard_input(monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b">a\nAC\n>b\nDE\n")))
    assert [(r.id, r.seq) for r in iter_records("-")] == [("a", "AC"), ("b", "DE")]


def test_spool_input_keeps_regular_files():
    path, fmt = spool_input(__file__, "auto")
    assert path == Path(__file__) and fmt == "auto"


# -- 6. sample --out suffixes --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["x.fasta", "x.csv", "x.jsonl.gz"])
def test_sample_refuses_unknown_out_suffixes(tiny_bert_dir, tmp_path, capsys, name):
    out = tmp_path / name
    assert main(["sample", "--seq", _seq(0), "--model", str(tiny_bert_dir), "--out", str(out)]) == 2
    assert "give a folder (no suffix)" in _error(capsys) and not out.exists()


# -- 7. binary text, demo --n, block sizes -----------------------------------------------------------
def test_train_refuses_binary_text(tmp_path, capsys):
    binary = tmp_path / "prog"
    binary.write_bytes(b"line one\nline two\n\x7fELF\x02\x01\x01\x00\xff\xfe")
    assert main(["train", "--text", str(binary), "--out", str(tmp_path / "m"), "--steps", "1", "--no-progress"]) == 2
    line = _error(capsys)
    assert str(binary) in line and "offset" in line


def test_demo_n_without_shared_data(monkeypatch, capsys):
    import mlmprob.data
    from mlmprob.commands.demo import DEMO_HEAVY, demo_records

    monkeypatch.setattr(mlmprob.data, "shared_data_dir", lambda: None)
    assert [r.id for r in demo_records(None)] == list(DEMO_HEAVY)
    assert main(["demo", "--n", "3", "--model", "no-such-model-is-loaded"]) == 2
    assert "--n 3: the Thera-SAbDab table" in _error(capsys)


@pytest.mark.parametrize("out", [None, "folder"])
def test_sample_refuses_a_block_larger_than_the_free_positions(tiny_bert_dir, tmp_path, capsys, out):
    argv = [
        "sample",
        "--seq",
        _seq(0, 30),
        "--model",
        str(tiny_bert_dir),
        "--block-size",
        "99",
        "--epochs",
        "1",
        "--chains",
        "1",
        "--no-progress",
        "--no-plot",
    ]
    if out:
        argv += ["--out", str(tmp_path / out)]
    assert main(argv) == 2
    assert "--block-size 99 is larger than its 30 free positions" in _error(capsys)
