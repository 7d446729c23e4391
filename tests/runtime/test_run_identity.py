"""A run's identity (issue 35): ``--resume`` continues only an output computed from the same input units and
the same model files, and never alters a file mlmprob did not write (no metadata, a link to the input, a link
in place of its lock, temporary file or parts folder). Every refusal is one line, exit status 2, and leaves
the files as they were."""

import io
import json
import os
import shutil
import sys

import pytest
from conftest import save_tiny_bert

from mlmprob.cli import main
from mlmprob.runtime.identity import UnitDigest, folder_digest, weights_identity
from mlmprob.runtime.writers import meta_path, read_results

AA = "ACDEFGHIKLMNPQRSTVWY"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the digest cache of this test alone


def _fasta_text(n, change=None):
    out = []
    for i in range(n):
        seq = " ".join(AA[(i + j) % 20] for j in range(6 + i % 4))
        if i == change:
            seq = "W " + seq[2:]
        out.append(f">s{i}\n{seq}\n")
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


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err  # one line, no traceback
    return err


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and not p.is_symlink()}


def _stdin(monkeypatch, text):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


# -- the input --------------------------------------------------------------------------------------------
def test_another_standard_input_is_refused_on_resume(tiny_bert_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "r.jsonl"
    _stdin(monkeypatch, _fasta_text(4))
    assert _score(tiny_bert_dir, "-", out) == 0  # cat a.fasta | mlmprob score - -o r.jsonl
    before = _snapshot(tmp_path)
    capsys.readouterr()
    _stdin(monkeypatch, _fasta_text(4, change=1))
    assert _score(tiny_bert_dir, "-", out, "--resume") == 2  # cat b.fasta | ... --resume
    err = _error(capsys)
    assert err.startswith(
        f"error: cannot resume {out}: the input changed since it was written (digest of its first 4 units "
    )
    assert _snapshot(tmp_path) == before  # nothing was changed
    _stdin(monkeypatch, _fasta_text(4))
    assert _score(tiny_bert_dir, "-", out, "--resume") == 0  # the same input resumes
    assert len(list(read_results(out))) == 4


def test_an_input_edited_between_run_and_resume_is_refused(tiny_bert_dir, tmp_path, capsys):
    inp, out = tmp_path / "in.fasta", tmp_path / "r.jsonl"
    inp.write_text(_fasta_text(6))
    assert _score(tiny_bert_dir, inp, out, "--limit", "3") == 0  # a run stopped after 3 records
    stored = json.loads(meta_path(out).read_text())["config"]["identity"]
    assert stored["input_units"] == 3 and len(stored["input_sha256"]) == 64
    inp.write_text(_fasta_text(6, change=2))  # the sequence of s2 changed
    before = _snapshot(tmp_path)
    capsys.readouterr()
    assert _score(tiny_bert_dir, inp, out, "--resume") == 2
    assert "the input changed since it was written" in _error(capsys)
    assert _snapshot(tmp_path) == before
    inp.write_text(_fasta_text(6, change=4))  # a change after the rows it holds: resumed
    assert _score(tiny_bert_dir, inp, out, "--resume") == 0
    assert [r["id"] for r in read_results(out)] == [f"s{i}" for i in range(6)]
    assert json.loads(meta_path(out).read_text())["config"]["identity"]["input_units"] == 6
    capsys.readouterr()
    inp.write_text(_fasta_text(5, change=4))  # fewer records than it holds rows of
    assert _score(tiny_bert_dir, inp, out, "--resume") == 2
    assert "(6 units then, 5 now)" in _error(capsys)


def test_unit_digest_sees_ids_and_sequences():
    from mlmprob.runtime.inputs import Record

    base = UnitDigest.of([Record("a", "AC"), Record("b", "DE")]).hexdigest()
    assert UnitDigest.of([Record("a", "AC"), Record("c", "DE")]).hexdigest() != base
    assert UnitDigest.of([Record("a", "AC"), Record("b", "DF")]).hexdigest() != base
    assert UnitDigest.of([Record("b", "DE"), Record("a", "AC")]).hexdigest() != base
    assert UnitDigest.of([Record("a", "AC"), Record("b", "DE")]).hexdigest() == base


# -- the model's files ----------------------------------------------------------------------------------
def test_weights_changed_in_place_are_refused_on_resume(tiny_bert_dir, tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, model)
    inp, out = tmp_path / "in.fasta", tmp_path / "r.jsonl"
    inp.write_text(_fasta_text(4))
    assert _score(model, inp, out, "--limit", "2") == 0
    assert json.loads(meta_path(out).read_text())["config"]["identity"]["weights"].startswith("sha256:")
    save_tiny_bert(model, init=0.5)  # new weights, same folder, same names
    before = _snapshot(tmp_path)
    capsys.readouterr()
    assert _score(model, inp, out, "--resume") == 2
    assert f"error: cannot resume {out}: the model's weights changed since it was written (" in _error(capsys)
    assert _snapshot(tmp_path) == before and len(list(read_results(out))) == 2


def test_folder_digest_is_cached_and_sees_a_rewrite_that_keeps_size_and_mtime(tmp_path, monkeypatch):
    folder = tmp_path / "m"
    folder.mkdir()
    weights = folder / "model.safetensors"
    weights.write_bytes(b"A" * 1000)
    (folder / "config.json").write_text("{}")
    (folder / "one_pass.safetensors").write_bytes(b"correction")  # the one-pass correction: not the model's
    (folder / "README.md").write_text("notes")
    old = 1_000_000_000
    for p in folder.iterdir():
        os.utime(p, (old, old))
    first = folder_digest(folder)
    assert first.startswith("sha256:") and weights_identity(folder) == first
    (folder / "one_pass.safetensors").write_bytes(b"refitted")
    (folder / "README.md").write_text("more notes")
    import mlmprob.runtime.identity as identity

    real_open = open
    reads = []
    monkeypatch.setattr(identity, "open", lambda p, *a, **k: reads.append(p) or real_open(p, *a, **k), raising=False)
    assert folder_digest(folder) == first and reads == []  # hashed once: from the cache
    weights.write_bytes(b"B" * 1000)  # same size...
    os.utime(weights, (old, old))  # ...and the old mtime
    assert folder_digest(folder) != first and reads == [os.path.realpath(weights)]


def test_builtin_models_are_identified_by_their_package():
    from importlib.metadata import version

    assert weights_identity("antiberty") == f"antiberty=={version('antiberty')}"
    assert weights_identity("no/such-hub-model") is None


# -- files mlmprob did not write -------------------------------------------------------------------------
FOREIGN = {
    "jsonl": lambda p: p.write_text('{"id": "s0", "mine": 1}\n{"id": "s1", "mine": 2'),  # no final newline
    "tsv": lambda p: p.write_text("name\tvalue\nx\t1\n"),
    "parquet": lambda p: __import__("pyarrow.parquet").parquet.write_table(
        __import__("pyarrow").table({"id": ["s0"], "mine": [1.0]}), p
    ),
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_resume_onto_a_foreign_output_changes_nothing(kind, tiny_bert_dir, tmp_path, capsys):
    if kind == "parquet":
        pytest.importorskip("pyarrow")
    inp, out = tmp_path / "in.fasta", tmp_path / f"r.{kind}"
    inp.write_text(_fasta_text(3))
    FOREIGN[kind](out)
    before = _snapshot(tmp_path)
    assert _score(tiny_bert_dir, inp, out, "--resume") == 2
    err = _error(capsys)
    assert err == (
        f"error: cannot resume {out}: it has no r.{kind}.meta.json (mlmprob did not write it, or its "
        "metadata was removed); nothing was changed: choose another --out"
    )
    assert _snapshot(tmp_path) == before
    assert {p.name for p in tmp_path.iterdir()} - {"cache"} == set(before)  # no lock, meta or parts left


def test_an_input_that_is_the_output_is_refused(tiny_bert_dir, tmp_path, capsys):
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": "a", "sequence": "A C D E"}\n')
    link = tmp_path / "out.jsonl"
    link.symlink_to(inp)
    for out in (link, inp):
        assert _score(tiny_bert_dir, inp, out, "--resume") == 2
        assert _error(capsys) == f"error: the input {inp} is the output {out} (the same file): choose another --out"
    assert inp.read_text() == '{"id": "a", "sequence": "A C D E"}\n'


@pytest.mark.parametrize("name", ["r.jsonl.lock", "r.jsonl.meta.json.tmp"])
def test_a_link_in_place_of_the_lock_or_the_meta_is_never_written_through(name, tiny_bert_dir, tmp_path, capsys):
    inp, out = tmp_path / "in.fasta", tmp_path / "r.jsonl"
    inp.write_text(_fasta_text(2))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / name).symlink_to(victim)
    assert _score(tiny_bert_dir, inp, out) == 2
    assert _error(capsys).startswith(f"error: {tmp_path / name} is a symbolic link; mlmprob does not write through it")
    assert victim.read_text() == "precious\n"


def test_a_parts_folder_that_is_a_link_is_refused(tiny_bert_dir, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    inp, out = tmp_path / "in.fasta", tmp_path / "r.parquet"
    inp.write_text(_fasta_text(2))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.tmp").write_text("mine")
    (tmp_path / "r.parquet.parts").symlink_to(elsewhere, target_is_directory=True)
    assert _score(tiny_bert_dir, inp, out, "--resume") == 2
    assert "r.parquet.parts is a symbolic link" in _error(capsys)
    assert (elsewhere / "keep.tmp").read_text() == "mine"
