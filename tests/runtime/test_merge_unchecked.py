"""An unchecked merge says so (issue 49, items 3 and 9): ``merge --no-meta-check`` and ``--no-input-check`` list
what they did not check under ``unchecked`` in the merged metadata (it copied the first part's metadata as if
every part were checked: a bfloat16 part among float32 ones came out "dtype float32"); a later merge treats such
an output as a part without metadata and a ``--resume`` onto it is refused; a part whose configuration
differs is refused even when the first part has no metadata; a merge whose recorded input file was deleted is
refused naming it (it skipped the input check without a word)."""

import json

from test_merge_trust import _error, _merge, _score, _shards, fasta  # noqa: F401 (fixture)

from mlmprob.runtime.writers import meta_path, read_results


def _config(path):
    return json.loads(meta_path(path).read_text())["config"]


def test_no_meta_check_marks_the_merged_output_unchecked(tiny_bert_dir, fasta, tmp_path, capsys):  # noqa: F811
    p1, _, p3 = _shards(tiny_bert_dir, fasta, tmp_path, 3)
    bf16 = tmp_path / "bf16.jsonl"
    assert _score(tiny_bert_dir, fasta, bf16, "--shard", "2/3", "--dtype", "bfloat16") == 0
    meta_path(bf16).unlink()
    out = tmp_path / "m.jsonl"
    assert _merge(out, [p1, bf16, p3], "--no-meta-check") == 0
    assert _config(out)["unchecked"] == [f"{bf16} has no metadata"]
    capsys.readouterr()
    # a later merge: refused unless told, as a part without metadata
    assert _merge(tmp_path / "again.jsonl", [out]) == 2
    assert _error(capsys) == (
        f"error: part {out} was merged without checks ({bf16} has no metadata): its run, shard, row count and "
        "completion are not known; merge it only if you know them, with --no-meta-check"
    )
    assert _merge(tmp_path / "again.jsonl", [out], "--no-meta-check") == 0
    assert "unchecked" in _config(tmp_path / "again.jsonl")
    capsys.readouterr()
    # a resume onto it: refused, naming the key
    assert _score(tiny_bert_dir, fasta, out, "--resume") == 2
    assert "unchecked" in _error(capsys)


def test_no_input_check_is_recorded_and_a_checked_merge_is_not_marked(tiny_bert_dir, fasta, tmp_path):  # noqa: F811
    parts = _shards(tiny_bert_dir, fasta, tmp_path, 2)
    assert _merge(tmp_path / "a.jsonl", parts, "--no-input-check") == 0
    assert _config(tmp_path / "a.jsonl")["unchecked"] == ["the input's ids (--no-input-check)"]
    assert _merge(tmp_path / "b.jsonl", parts) == 0
    assert "unchecked" not in _config(tmp_path / "b.jsonl")


def test_parts_that_differ_are_refused_behind_a_part_without_metadata(tiny_bert_dir, fasta, tmp_path, capsys):  # noqa: F811
    p1, p2, p3 = _shards(tiny_bert_dir, fasta, tmp_path, 3)
    q3 = tmp_path / "q3.jsonl"
    assert _score(tiny_bert_dir, fasta, q3, "--shard", "3/3", "--dtype", "bfloat16") == 0
    meta_path(p1).unlink()  # the first part has none: the others are still compared with each other
    capsys.readouterr()
    assert _merge(tmp_path / "m.jsonl", [p1, p2, q3], "--no-meta-check") == 2
    assert "computed_with.dtype" in _error(capsys)
    assert not (tmp_path / "m.jsonl").exists()
    # and the input ids are still checked from a part that has metadata
    assert _merge(tmp_path / "m.jsonl", [p1, p2, p3], "--no-meta-check") == 0
    assert len(list(read_results(tmp_path / "m.jsonl"))) == 24


def test_a_deleted_input_is_named(tiny_bert_dir, fasta, tmp_path, capsys):  # noqa: F811
    parts = _shards(tiny_bert_dir, fasta, tmp_path, 2)
    fasta.unlink()
    capsys.readouterr()
    assert _merge(tmp_path / "m.jsonl", parts) == 2
    assert _error(capsys) == (
        f"error: the parts' input {fasta} no longer exists: the input ids missing from every part cannot be "
        "found; restore it, or merge with --no-input-check (the merged output then says it was not checked)"
    )
    assert _merge(tmp_path / "m.jsonl", parts, "--no-input-check") == 0


def test_a_resumed_output_with_a_deeply_nested_line_is_one_line(tiny_bert_dir, fasta, tmp_path, capsys):  # noqa: F811
    """A hand-edited output line nested 100,000 deep was a RecursionError traceback on --resume (issue 49)."""
    out = tmp_path / "o.jsonl"
    assert _score(tiny_bert_dir, fasta, out, "--limit", "2") == 0
    with open(out, "a") as f:
        f.write("[" * 100_000 + "]" * 100_000 + "\n")
    capsys.readouterr()
    assert _score(tiny_bert_dir, fasta, out, "--resume") == 2
    assert "line 3 is damaged (not valid JSON)" in _error(capsys)
