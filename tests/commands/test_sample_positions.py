"""``sample --positions`` takes 1-based residue/word numbers (0-based in earlier versions): 0 is refused in one
line that says the base, 1 is the first residue, the help says it, and the CLI and the app turn the same typed
numbers into the same token mask."""

import json

import pytest
import torch

from mlmprob import load_mlm
from mlmprob.cli import main

SEQ = "A C D E F G H I K L"  # the tiny BERT's tokenizer: one residue per word
RES = SEQ.replace(" ", "")


def _sample(model, *extra, out=None):
    argv = [
        "sample",
        "--model",
        str(model),
        "--seq",
        SEQ,
        "--chains",
        "4",
        "--epochs",
        "3",
        "--burn-in",
        "0",
        "--init",
        "random",
        "--seed",
        "1",
        "--device",
        "cpu",
        "--no-progress",
        *extra,
    ]
    return main(argv + (["--out", str(out)] if out else []))


@pytest.mark.parametrize("given", ["0", "0-3", "2,0", "3, 0"])
def test_a_zero_is_refused_in_one_line_that_says_the_base(tiny_bert_dir, capsys, given):
    assert _sample(tiny_bert_dir, "--positions", given) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "--positions: position 0; positions count from 1" in err
    assert "1-based" in err and "0-based in earlier versions" in err


@pytest.mark.parametrize("number, index", [("1", 0), ("10", 9)])
def test_one_is_the_first_residue(tiny_bert_dir, tmp_path, number, index):
    """Streamed rows: with --init random only the numbered residue can differ from the input, and it does
    in some chain; every other residue is kept."""
    out = tmp_path / "o.jsonl"
    assert _sample(tiny_bert_dir, "--positions", number, out=out) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and all(r["n_free"] == 1 for r in rows)
    got = [r["sequence"].replace(" ", "") for r in rows]
    for s in got:
        assert len(s) == len(RES) and s[:index] + s[index + 1 :] == RES[:index] + RES[index + 1 :]
    assert any(s[index] != RES[index] for s in got)
    config = json.loads(out.with_name(out.name + ".meta.json").read_text())["config"]  # an old run's resume is refused
    assert config["positions"] == number and config["positions_base"] == 1


def test_folder_mode_takes_the_same_numbers(tiny_bert_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert _sample(tiny_bert_dir, "--positions", "2-3", "--no-plot", out=out) == 0
    seqs = (out / "samples.fasta").read_text().splitlines()[1::2]
    assert len(seqs) == 4 * 3
    for s in seqs:
        s = s.replace(" ", "")
        assert s[0] == RES[0] and s[3:] == RES[3:]
    assert any(s.replace(" ", "")[1:3] != RES[1:3] for s in seqs)


def test_past_the_last_residue_names_the_typed_number(tiny_bert_dir, capsys):
    assert _sample(tiny_bert_dir, "--positions", "11") == 2
    assert "seq1: position 11 is outside the sequence's 10 residues/words" in capsys.readouterr().err


def test_every_help_that_takes_positions_says_the_base(capsys):
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "free residue/word numbers, 1-based as in mutation strings" in text


@pytest.mark.parametrize(
    "model, text, typed",
    [("tiny", "ACDEFGHIKL", "2-4,8"), ("tiny", "AC_EF", "1,3"), ("en", "the unbelievable cat sat on the mat", "2,4-5")],
)
def test_the_app_and_the_cli_give_the_same_token_mask(tiny_bert_dir, model, text, typed):
    from mlmprob.app.compute import encode_one, parse_numbers, word_tokens
    from mlmprob.app.dynamics import sample_steps
    from mlmprob.commands.sample import parse_positions
    from mlmprob.sampling.stream import free_positions

    if model == "tiny":
        mlm = load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")
        text = " ".join(text)
    else:
        mlm = load_mlm("en-small", device="cpu")
    enc = encode_one(mlm, text)
    cli = free_positions(mlm, enc, 0, "x", text, parse_positions(typed))
    app = torch.zeros_like(cli)
    app[word_tokens(enc, parse_numbers(typed))] = True
    assert torch.equal(cli, app) and cli.any()
    first = next(sample_steps(mlm, text, positions=typed, epochs=1, chains=1))
    assert first.free == tuple(cli.nonzero()[:, 0].tolist())


def test_a_run_written_with_0_based_positions_is_not_resumed(tiny_bert_dir, tmp_path, capsys):
    """An output of an earlier version stored ``--positions`` without its base: resuming it with the same
    text (which now names other residues) is refused, naming the key."""
    out = tmp_path / "o.jsonl"
    assert _sample(tiny_bert_dir, "--positions", "2", out=out) == 0
    meta = out.with_name(out.name + ".meta.json")
    stored = json.loads(meta.read_text())
    del stored["config"]["positions_base"]
    meta.write_text(json.dumps(stored))
    capsys.readouterr()
    assert _sample(tiny_bert_dir, "--positions", "2", "--resume", out=out) == 2
    assert "positions_base" in capsys.readouterr().err
