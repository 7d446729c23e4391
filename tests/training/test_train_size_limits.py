"""``mlmprob train`` refuses a size option of ``10**9`` in one line before any allocation (each was a multi-GiB
allocation and a traceback: numpy/torch 'cannot allocate', or a SystemError from transformers)."""

import pytest

from mlmprob.cli import main
from mlmprob.errors import MLMProbError
from mlmprob.synthetic.io import make_language
from mlmprob.training.config import TrainConfig

BIG = "1000000000"
BASE = ["train", "--synthetic", "hmm", "--steps", "1", "--n-train", "8", "--n-heldout", "4", "--no-progress"]


@pytest.mark.parametrize(
    "option,expect",
    [
        ("--vocab-size", "a hmm language of 4 hidden states, 1,000,000,000 symbols"),
        ("--length", "symbols and length 1,000,000,000 would have about"),
        ("--n-states", "a hmm language of 1,000,000,000 hidden states"),
        ("--n-train", "n_train 1,000,000,000 + n_heldout 4 sequences"),
        ("--n-heldout", "n_train 8 + n_heldout 1,000,000,000 sequences"),
        ("--hidden", "a model of hidden size 1,000,000,000, 2 layers"),
        ("--layers", "1,000,000,000 layers"),
        ("--intermediate", "intermediate size 1,000,000,000"),
        ("--batch-size", "trained on batches of 1,000,000,000 x 14 tokens"),
    ],
)
def test_a_huge_size_is_one_line_before_any_allocation(option, expect, tmp_path, capsys):
    assert main([*BASE, "--out", str(tmp_path / "run"), option, BIG]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and expect in err, err
    if option in ("--vocab-size", "--length", "--n-states", "--n-train", "--n-heldout"):
        assert not (tmp_path / "run").exists()  # refused before anything was written: no empty --out folder
    else:  # refused after the data step wrote the language it samples from
        assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["language.safetensors"]


def test_a_refused_run_keeps_a_folder_that_existed(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    assert main([*BASE, "--out", str(tmp_path / "run"), "--hidden", BIG]) == 2
    assert (tmp_path / "run").is_dir()


@pytest.mark.parametrize("command", [["train", "--synthetic", "hmm"], ["joints", "--report-only"]])
def test_out_naming_a_file_says_so(command, tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert main([*command, "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: --out {str(tmp_path / 'f')!r} is a file; give a folder", err
    assert (tmp_path / "f").read_text() == "x"


def test_the_defaults_and_a_moderate_model_fit():
    TrainConfig().check_size(25, 14)
    TrainConfig(hidden_size=768, num_heads=12, num_layers=12, intermediate_size=3072, batch_size=32).check_size(
        30_000, 512
    )
    make_language("potts", 20, 100)
    with pytest.raises(MLMProbError, match="a potts language of 100,000 symbols"):
        make_language("potts", 100_000, 12)
