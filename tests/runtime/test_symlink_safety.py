"""Symlink-safe side files (issue 35): a symbolic link where a run creates its lock (``OUT.lock``), its meta file
(``OUT.meta.json``) or the meta's temporary file (``OUT.meta.json.tmp``), its Parquet parts folder (``OUT.parts``),
a checkpoint folder or a joints record file's temporary file is refused with one line naming it, and never
followed: the file it points to keeps its content, the folder it points to keeps its files, and nothing is
created where a dangling link points."""

import pytest

from mlmprob.cli import main
from mlmprob.runtime.lock import WriterLock
from mlmprob.runtime.safefs import UnsafePath, real_dir, replace_file
from mlmprob.runtime.writers import open_writer

KEEP = "a file mlmprob did not write\n"


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "elsewhere" / "victim.txt"
    v.parent.mkdir()
    v.write_text(KEEP)
    return v


def _one_line(err: str, name: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and name in lines[0] and "symbolic link" in lines[0], err


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path, victim):
    out = tmp_path / "r.jsonl"
    (tmp_path / "r.jsonl.lock").symlink_to(victim)
    with pytest.raises(UnsafePath, match="r.jsonl.lock is a symbolic link"):
        WriterLock(out).acquire()
    assert victim.read_text() == KEEP


def test_a_dangling_symlinked_lock_creates_nothing(tmp_path):
    target = tmp_path / "elsewhere.txt"
    (tmp_path / "r.jsonl.lock").symlink_to(target)
    with pytest.raises(UnsafePath):
        WriterLock(tmp_path / "r.jsonl").acquire()
    assert not target.exists()


@pytest.mark.parametrize("side", ["meta.json", "meta.json.tmp"])
@pytest.mark.parametrize("suffix", [".jsonl", ".tsv", ".parquet"])
def test_a_symlinked_meta_or_meta_temp_file_is_refused(tmp_path, victim, side, suffix):
    out = tmp_path / f"r{suffix}"
    (tmp_path / f"r{suffix}.{side}").symlink_to(victim)
    with pytest.raises(UnsafePath, match=f"r{suffix}.{side} is a symbolic link"):
        with open_writer(out, config={"seed": 1}) as w:
            w.write([{"id": "a", "x": 1}])
    assert victim.read_text() == KEEP
    assert not (tmp_path / f"r{suffix}.lock").exists()  # the lock was released


def test_a_stale_regular_meta_temp_file_is_replaced(tmp_path):
    out = tmp_path / "r.jsonl"
    (tmp_path / "r.jsonl.meta.json.tmp").write_text("half a meta from a kill")
    with open_writer(out, config={"seed": 1}) as w:
        w.write([{"id": "a"}])
        w.close(complete=True)
    assert (
        not (tmp_path / "r.jsonl.meta.json.tmp").exists()
        and '"complete": true' in (tmp_path / "r.jsonl.meta.json").read_text()
    )


@pytest.mark.parametrize("resume", [False, True])
def test_a_symlinked_parts_folder_keeps_its_files(tmp_path, resume):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    for name in ("notes.tmp", "part-000000.parquet.tmp", "data.txt"):
        (folder / name).write_text(KEEP)
    out = tmp_path / "r.parquet"
    (tmp_path / "r.parquet.parts").symlink_to(folder, target_is_directory=True)
    with pytest.raises(UnsafePath, match="r.parquet.parts is a symbolic link"):
        open_writer(out, resume=resume, config={"seed": 1})
    assert sorted(p.name for p in folder.iterdir()) == ["data.txt", "notes.tmp", "part-000000.parquet.tmp"]
    assert all(p.read_text() == KEEP for p in folder.iterdir())


def test_parquet_parts_are_written_through_no_link(tmp_path, victim):
    out = tmp_path / "r.parquet"
    with open_writer(out, config={"seed": 1}, part_rows=1) as w:
        w.write([{"id": "a", "x": 1}])  # a committed part
        (tmp_path / "r.parquet.tmp").symlink_to(victim)  # where the joined file is written first
        with pytest.raises(UnsafePath, match="r.parquet.tmp is a symbolic link"):
            w.close(complete=True)
    assert victim.read_text() == KEEP


def test_merge_refuses_a_symlinked_meta_of_its_output(tmp_path, victim):
    from mlmprob.runtime.merge import merge_parts

    part = tmp_path / "p1.jsonl"
    with open_writer(part, config={"seed": 1, "shard": "1/1"}) as w:
        w.write([{"id": "a"}, {"id": "b"}])
        w.close(complete=True)
    out = tmp_path / "all.jsonl"
    (tmp_path / "all.jsonl.meta.json").symlink_to(victim)
    with pytest.raises(UnsafePath, match="all.jsonl.meta.json is a symbolic link"):
        merge_parts(out, [part])
    assert victim.read_text() == KEEP and not out.exists()


def test_checkpoint_folders_are_never_links(tmp_path):
    from mlmprob.training.checkpoint import list_checkpoints, save_checkpoint

    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "model.safetensors").write_text(KEEP)
    root = tmp_path / "run" / "checkpoints"
    root.mkdir(parents=True)
    (root / ".tmp-step-00000003").symlink_to(folder, target_is_directory=True)
    with pytest.raises(UnsafePath, match="tmp-step-00000003 is a symbolic link"):
        save_checkpoint(tmp_path / "run", 3, None, None, None, {}, keep=2)
    assert (folder / "model.safetensors").read_text() == KEEP
    (folder / "trainer_state.json").write_text("{}")
    (root / "step-00000001").symlink_to(folder, target_is_directory=True)
    assert list_checkpoints(tmp_path / "run") == []  # never resumed from (or deleted through) a link


def test_the_helpers(tmp_path, victim):
    (tmp_path / "d").symlink_to(victim.parent, target_is_directory=True)
    with pytest.raises(UnsafePath, match="is a symbolic link"):
        real_dir(tmp_path / "d")
    (tmp_path / "f").symlink_to(victim)
    with pytest.raises(UnsafePath, match="f is a symbolic link"):
        replace_file(tmp_path / "f", "x")
    assert victim.read_text() == KEEP and real_dir(tmp_path / "new").is_dir()


def test_score_refuses_a_symlinked_lock_with_one_line(tiny_bert_dir, tmp_path, victim, capsys):
    seqs = tmp_path / "s.fasta"
    seqs.write_text(">a\nEVQLVESGGG\n")
    out = tmp_path / "r.jsonl"
    (tmp_path / "r.jsonl.lock").symlink_to(victim)
    assert (
        main(["score", str(seqs), "--model", str(tiny_bert_dir), "--device", "cpu", "--no-progress", "-o", str(out)])
        == 2
    )
    _one_line(capsys.readouterr().err, "r.jsonl.lock")
    assert victim.read_text() == KEEP and not out.exists()


def test_score_resume_refuses_a_symlinked_meta_temp_file(tiny_bert_dir, tmp_path, victim, capsys):
    seqs = tmp_path / "s.fasta"
    seqs.write_text(">a\nEVQLVESGGG\n>b\nEVQLVESGGA\n")
    out = tmp_path / "r.jsonl"
    argv = ["score", str(seqs), "--model", str(tiny_bert_dir), "--device", "cpu", "--no-progress", "-o", str(out)]
    assert main(argv) == 0
    before = out.read_text()
    (tmp_path / "r.jsonl.meta.json.tmp").symlink_to(victim)
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 2
    _one_line(capsys.readouterr().err, "r.jsonl.meta.json.tmp")
    assert victim.read_text() == KEEP and out.read_text() == before
