"""Issue 49 (red team, third round) on ``mlmprob sample``: item 6, a million chains refused before one epoch of
them is allocated; item 9, a resume whose ``--positions`` are spelled differently but free the same tokens."""

import json

import pytest

from mlmprob.cli import main
from mlmprob.commands.resume_positions import canonical_positions, compact_numbers
from mlmprob.sampling.spec import MAX_RUN_BYTES, SamplerSpec

AB = "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSY"  # 32 residues


def _error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# -- item 6: one epoch of every chain at once is in the estimate ------------------------------------------------------
def test_an_epoch_of_every_chain_is_counted():
    spec = SamplerSpec(epochs=1, burn_in=0)
    assert spec.run_bytes(10**6, 34) < MAX_RUN_BYTES < spec.run_bytes(10**6, 34, 25)  # the conditionals [B, L, V]
    spec.check_size(1000, 34, 25)  # a thousand chains: about 35 MB


def test_a_million_chains_are_refused_before_they_are_made(tiny_bert_dir, capsys):
    args = ["sample", "--seq", AB, "--model", str(tiny_bert_dir), "--device", "cpu", "--no-progress"]
    assert main([*args, "--chains", "1000000", "--epochs", "1", "--burn-in", "0"]) == 2
    err = _error(capsys)
    assert "1,000,000 chains x 34 tokens would keep about" in err and "one epoch of every chain" in err, err
    assert "more than the 16 GiB a run may" in err


# -- item 9: --positions compared by what they resolve to -------------------------------------------------------------
def test_positions_are_stored_one_way():
    assert compact_numbers([5, 1, 2, 3, 4, 9]) == "1-5,9"
    assert canonical_positions("5, 1-4") == canonical_positions("1,2,3,4,5") == "1-5"


@pytest.fixture
def run(tiny_bert_dir, tmp_path):
    src = tmp_path / "s32.fasta"
    src.write_text("".join(f">r{i}\n{AB}\n" for i in range(3)))
    base = ["sample", "--input", str(src), "--model", str(tiny_bert_dir), "--device", "cpu", "--no-progress"]
    base += ["--epochs", "1", "--burn-in", "0", "--chains", "2"]

    def go(out, *more):
        return main([*base, "--out", str(out), *more])

    return go


def _cut(out, keep: int) -> None:
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:keep]))


@pytest.mark.parametrize(("first", "then"), [([], ["--positions", "1-32"]), (["--positions", "1-32"], [])])
def test_all_positions_spelled_as_a_range_resume_the_default(run, tmp_path, first, then):
    out = tmp_path / "o.jsonl"
    assert run(out, *first) == 0
    full = out.read_text()
    stored = json.loads((tmp_path / "o.jsonl.meta.json").read_text())["config"]
    _cut(out, 2)  # a kill after the first record
    assert run(out, "--resume", *then) == 0
    assert out.read_text() == full  # the same rows: the same free positions
    assert json.loads((tmp_path / "o.jsonl.meta.json").read_text())["config"]["positions"] == stored["positions"]


def test_another_spelling_of_the_same_numbers_resumes(run, tmp_path):
    out = tmp_path / "o.tsv"
    assert run(out, "--positions", "5,1-4") == 0
    _cut(out, 3)
    assert run(out, "--resume", "--positions", "1,2,3,4,5") == 0
    assert len(out.read_text().splitlines()) == 7  # a header and 2 chains of 3 records


def test_positions_that_free_other_tokens_are_still_refused(run, tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    assert run(out) == 0
    _cut(out, 2)
    capsys.readouterr()
    assert run(out, "--resume", "--positions", "1-31") == 2
    err = _error(capsys)
    assert "positions=None" in err and "positions='1-31'" in err, err


def test_a_run_folder_resumes_under_an_equivalent_spelling(tiny_bert_dir, tmp_path, capsys):
    args = ["sample", "--seq", AB, "--model", str(tiny_bert_dir), "--device", "cpu", "--no-progress", "--no-plot"]
    args += ["--epochs", "1", "--burn-in", "0", "--chains", "2", "--out", str(tmp_path / "f")]
    assert main(args) == 0
    first = (tmp_path / "f" / "chains.jsonl").read_text()
    assert main([*args, "--positions", "1-32"]) == 0
    assert (tmp_path / "f" / "chains.jsonl").read_text() == first
