"""The English corpus reader and the en-small evaluation/export helpers, on a tiny trained model."""

import json
import zipfile

import pytest
import torch

import mlmprob
from experiments import english, english_corpus
from mlmprob import MLMProbError
from mlmprob.training import TextSource, TrainConfig, train


def test_read_brown_strips_tags(tmp_path):
    z = tmp_path / "brown.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("brown/ca01", "\n\n\tThe/at jury/nn said/vbd ``/`` no/at ''/'' ./.\n\n\tIt/pps ran/vbd ./.\n")
        f.writestr("brown/cats.txt", "ca01 news\n")
    assert english_corpus.read_brown(z) == ['The jury said " no " .', "It ran ."]


def test_read_austen_splits_paragraphs_and_drops_headings(tmp_path):
    p = tmp_path / "novel.txt"
    p.write_text("CHAPTER I\n\nMr. Darcy came in. She was\nglad!\n\nThe end.\n")
    assert english_corpus.read_austen(p) == ["Mr. Darcy came in.", "She was glad!", "The end."]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("en")
    words = "the cat sat on a mat while dog ran after cats and dogs".split()
    g = torch.Generator().manual_seed(0)
    lines = [
        " ".join(words[i] for i in torch.randint(len(words), (4 + n % 6,), generator=g).tolist()) for n in range(80)
    ]
    corpus = d / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n")
    cfg = TrainConfig(
        hidden_size=16,
        num_layers=1,
        num_heads=2,
        intermediate_size=32,
        batch_size=16,
        max_steps=4,
        eval_every=4,
        checkpoint_every=4,
        warmup_steps=1,
        kl_sequences=0,
    )
    train(cfg, TextSource([str(corpus)], vocab_size=40, max_length=24, heldout_fraction=0.1), d / "run", progress=False)
    return d, corpus, lines


def test_score_set_counts_and_ranges(tiny_run):
    d, corpus, lines = tiny_run
    mlm = mlmprob.load_mlm(str(d / "run"))
    uni = english.most_frequent_token(mlm, lines)
    fit = english.fitting(mlm, lines[:20])
    assert len(fit) >= 15 and english.fitting(mlm, ["cat " * 30], counts=True) == ([], 1, 0)  # > 24 tokens
    s = english.score_set(mlm, "toy", lines[:20] + ["cat " * 30], unigram_id=uni)
    _, n_long, n_unknown = english.fitting(mlm, lines[:20], counts=True)
    assert n_long + n_unknown == 20 - len(fit)
    assert s.sentences == len(fit) and s.skipped_long == n_long + 1 and s.skipped_unknown == n_unknown
    # 15 % joint masking selects k = max(1, round(0.15 n)) tokens per sentence, as in training
    assert s.joint15_tokens == sum(max(1, int(0.15 * (len(mlm.encode([t]).input_ids[0]) - 2) + 0.5)) for t in fit)
    assert s.tokens == sum(len(mlm.encode([t]).input_ids[0]) - 2 for t in fit)
    assert 0 <= s.single_accuracy <= 1 and 0 <= s.joint15_accuracy <= 1 and s.pll_per_token < 0
    gold = torch.cat([mlm.encode([t]).input_ids[0, 1:-1] for t in fit])
    assert s.unigram_accuracy == pytest.approx(float((gold == uni).double().mean()))
    with pytest.raises(MLMProbError, match="empty"):
        english.score_set(mlm, "none", [])


def test_heldout_lines_and_export(tiny_run, tmp_path):
    d, corpus, lines = tiny_run
    train_lines, held = english.split_lines(d / "run", corpus)
    assert len(held) == json.loads((d / "run" / "trainer_state.json").read_text())["data"]["n_heldout"] == 8
    assert set(held) <= set(lines)
    assert sorted(train_lines + held) == sorted(lines)
    other = tmp_path / "corpus.txt"  # same name, one line fewer: the split no longer matches the run
    other.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(MLMProbError, match="does not match the run"):
        english.split_lines(d / "run", other)
    with pytest.raises(MLMProbError, match="trainer_state"):
        english.split_lines(tmp_path, corpus)
    dest = english.export(d / "run", tmp_path / "pkg")
    assert (dest / "model.safetensors").is_file() and (dest / "MODEL_CARD.md").is_file()
    assert mlmprob.load_mlm(str(dest)).vocab_size == mlmprob.load_mlm(str(d / "run")).vocab_size
    with pytest.raises(MLMProbError, match="no finished model"):
        english.export(tmp_path / "nothing", tmp_path / "x")
