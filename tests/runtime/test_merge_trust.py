"""``mlmprob merge`` trusts only what it can verify (issue 35): a part needs its metadata (or an explicit
``--no-meta-check``), its row count and its last line are checked even with ``--no-input-check``, parts of
other inputs or weights are refused, .tsv parts are not mixed with typed ones, and parts made from standard
input are merged without reading merge's own standard input. Every refusal: one line, exit status 2, no
output."""

import io
import json
import shutil
import sys

import pytest
from conftest import save_tiny_bert

from mlmprob.cli import main
from mlmprob.runtime.writers import meta_path, read_results

AA = "ACDEFGHIKLMNPQRSTVWY"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _fasta_text(n, change=None):
    out = []
    for i in range(n):
        seq = " ".join(AA[(i + j) % 20] for j in range(6 + i % 4))
        out.append(f">s{i}\n{'W ' + seq[2:] if i == change else seq}\n")
    return "".join(out)


def _score(model, inp, out, *extra):
    return main(
        [
            "score",
            str(inp),
            "--model",
            str(model),
            "--out",
            str(out),
            "--no-progress",
            "--device",
            "cpu",
            *map(str, extra),
        ]
    )


def _shards(model, inp, tmp_path, n, suffixes=None, extra=()):
    parts = []
    for i in range(1, n + 1):
        part = tmp_path / f"p{i}{(suffixes or ['.jsonl'] * n)[i - 1]}"
        assert _score(model, inp, part, "--shard", f"{i}/{n}", *extra) == 0
        parts.append(part)
    return parts


def _merge(out, parts, *flags):
    return main(["merge", "--out", str(out), *flags, *map(str, parts)])


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


@pytest.fixture
def fasta(tmp_path):
    inp = tmp_path / "in.fasta"
    inp.write_text(_fasta_text(24))
    return inp


def test_a_part_without_metadata_is_refused_unless_told(tiny_bert_dir, fasta, tmp_path, capsys):
    p1, p2, p3 = _shards(tiny_bert_dir, fasta, tmp_path, 3)
    bf16 = tmp_path / "bf16.jsonl"
    assert _score(tiny_bert_dir, fasta, bf16, "--shard", "2/3", "--dtype", "bfloat16") == 0
    meta_path(bf16).unlink()  # a bfloat16 part whose meta was removed
    capsys.readouterr()
    out = tmp_path / "m.jsonl"
    assert _merge(out, [p1, bf16, p3]) == 2
    assert _error(capsys) == (
        f"error: part {bf16} has no bf16.jsonl.meta.json: its run, shard, row count and "
        "completion cannot be checked; merge it only if you know them, with --no-meta-check"
    )
    assert not out.exists()
    assert _merge(out, [p1, bf16, p3], "--no-meta-check") == 0  # told: merged, and said so
    err = capsys.readouterr().err
    assert f"warning: 1 part(s) merged without metadata, unchecked: {bf16}" in err
    assert len(list(read_results(out))) == 24


def test_a_missing_shard_beside_a_part_without_metadata_loses_no_rows_silently(tiny_bert_dir, fasta, tmp_path, capsys):
    p1, p2, _ = _shards(tiny_bert_dir, fasta, tmp_path, 3)
    meta_path(p2).unlink()
    capsys.readouterr()
    out = tmp_path / "m.jsonl"
    assert _merge(out, [p1, p2]) == 2  # shard 3/3 missing
    assert "has no p2.jsonl.meta.json" in _error(capsys)
    assert _merge(out, [p1, p2], "--no-meta-check") == 2
    assert _error(capsys) == "error: 1 of the 3 shards missing from the parts"
    assert not out.exists()


@pytest.mark.parametrize("damage", ["truncated", "torn"])
def test_a_damaged_part_is_refused_even_without_the_input_check(damage, tiny_bert_dir, fasta, tmp_path, capsys):
    p1, p2 = _shards(tiny_bert_dir, fasta, tmp_path, 2)
    lines = p1.read_text().splitlines(keepends=True)
    assert len(lines) == 12 and json.loads(meta_path(p1).read_text())["rows"] == 12
    if damage == "truncated":
        p1.write_text("".join(lines[:-2]))  # 22 of 24 rows
    else:
        p1.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # 23 rows and half a line
    capsys.readouterr()
    out = tmp_path / "m.jsonl"
    assert _merge(out, [p1, p2], "--no-input-check") == 2
    err = _error(capsys)
    if damage == "truncated":
        assert err == (
            f"error: part {p1} holds 10 rows but its run wrote 12 (p1.jsonl.meta.json): it was truncated "
            "or changed since; rerun its shard"
        )
    else:
        assert err.startswith(f"error: part {p1} ends in a torn line")
    assert not out.exists()


def test_an_unfinished_part_is_refused(tiny_bert_dir, fasta, tmp_path, capsys):
    p1, p2 = _shards(tiny_bert_dir, fasta, tmp_path, 2)
    meta = json.loads(meta_path(p2).read_text())
    del meta["complete"]
    meta_path(p2).write_text(json.dumps(meta))
    capsys.readouterr()
    assert _merge(tmp_path / "m.jsonl", [p1, p2], "--no-input-check") == 2
    assert "is unfinished" in _error(capsys)


def test_tsv_parts_are_not_mixed_with_typed_ones(tiny_bert_dir, fasta, tmp_path, capsys):
    parts = _shards(tiny_bert_dir, fasta, tmp_path, 3, [".jsonl", ".tsv", ".jsonl"])
    capsys.readouterr()
    assert _merge(tmp_path / "m.jsonl", parts) == 2
    assert _error(capsys) == (
        "error: parts are of different formats (.jsonl, .tsv): a .tsv part holds text cells, so "
        "its numbers would become strings; merge parts of one format"
    )
    (tmp_path / "t").mkdir()
    tsv = _shards(tiny_bert_dir, fasta, tmp_path / "t", 2, [".tsv", ".tsv"])
    capsys.readouterr()
    assert _merge(tmp_path / "m.jsonl", tsv) == 2
    assert "merged into .jsonl their numbers would become strings" in _error(capsys)
    assert _merge(tmp_path / "m.tsv", tsv) == 0  # text into text: faithful
    assert [r["id"] for r in read_results(tmp_path / "m.tsv")] == [f"s{i}" for i in range(24)]


def test_parts_of_other_weights_are_refused(tiny_bert_dir, fasta, tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, model)
    p1 = tmp_path / "p1.jsonl"
    assert _score(model, fasta, p1, "--shard", "1/2") == 0
    save_tiny_bert(model, init=0.5)  # the folder's weights changed in between
    p2 = tmp_path / "p2.jsonl"
    assert _score(model, fasta, p2, "--shard", "2/2") == 0
    capsys.readouterr()
    assert _merge(tmp_path / "m.jsonl", [p1, p2]) == 2
    assert _error(capsys).startswith(f"error: parts were computed from different model weights: {p1} has ")


def test_parts_of_another_command_or_suffix_are_named(tiny_bert_dir, fasta, tmp_path, capsys):
    """A design part beside a score part was called 'different model weights'; a part of an unknown suffix was
    called a bad --out."""
    p1 = _shards(tiny_bert_dir, fasta, tmp_path, 1)[0]
    d = tmp_path / "d.jsonl"
    design = ["design", "ACDEFG", "--chains", "1", "--steps", "1", "--model", str(tiny_bert_dir), "--device", "cpu"]
    assert main([*design, "--no-progress", "--out", str(d)]) == 0
    capsys.readouterr()
    assert _merge(tmp_path / "m.jsonl", [p1, d]) == 2
    assert _error(capsys) == (
        f"error: parts come from different commands: {p1} holds results of mlmprob score, {d} of mlmprob design"
    )
    other = tmp_path / "p.txt"
    other.write_text("x\n")
    assert _merge(tmp_path / "m.jsonl", [other]) == 2
    assert _error(capsys) == f"error: part {str(other)!r}: merge reads .jsonl, .tsv or .parquet parts"
    assert not (tmp_path / "m.jsonl").exists()


class _NoStdin(io.TextIOBase):
    def read(self, *a):
        raise AssertionError("merge read its standard input")

    readline = read

    @property
    def buffer(self):
        raise AssertionError("merge read its standard input")


def _stdin(monkeypatch, text):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_shards_of_standard_input_merge_without_reading_stdin(tiny_bert_dir, tmp_path, capsys, monkeypatch):
    parts = [tmp_path / "p1.jsonl", tmp_path / "p2.jsonl"]
    for i, part in enumerate(parts, 1):
        _stdin(monkeypatch, _fasta_text(8))
        assert _score(tiny_bert_dir, "-", part, "--shard", f"{i}/2") == 0
    monkeypatch.setattr(sys, "stdin", _NoStdin())
    out = tmp_path / "m.jsonl"
    assert _merge(out, parts) == 0
    assert sorted(r["id"] for r in read_results(out)) == sorted(f"s{i}" for i in range(8))
    # a shard of another standard input: refused by the parts' identities, not by re-reading stdin
    _stdin(monkeypatch, _fasta_text(8, change=3))
    other = tmp_path / "other.jsonl"
    assert _score(tiny_bert_dir, "-", other, "--shard", "2/2") == 0
    monkeypatch.setattr(sys, "stdin", _NoStdin())
    capsys.readouterr()
    assert _merge(tmp_path / "m2.jsonl", [parts[0], other]) == 2
    assert _error(capsys).startswith(f"error: parts were computed from different inputs: {parts[0]} has ")
