"""Strings in, numbers out (issue 52, item 3): ``mlmprob.pll``, ``energy``, ``token_scores`` and ``loglik`` take a
sequence or a list of sequences as well as token ids. Text is encoded by the model's own tokenizer, right-padded as
``mlm.encode`` pads: the scores are the ids path's, bit for bit, on padded batches of random-weight models."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_hf

import mlmprob
from mlmprob import MLMProbError
from mlmprob.models.exact import LookupMLM

pytestmark = pytest.mark.usefixtures("one_thread")
SEQS = ["ACDEFGHIKL", "GHIKA", "LKIHGFEDCAACD"]  # three lengths: the shorter rows are padded


@pytest.fixture(scope="module", params=["bert", "roberta"])
def mlm(request):
    return tiny_hf(request.param)


def _same(a, b) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


@pytest.mark.parametrize("method", ["exact", "unmasked"])
def test_pll_of_text_is_the_pll_of_its_ids_bit_for_bit(mlm, method):
    enc = mlm.encode(SEQS)
    assert (enc.input_ids == 1).any()  # the batch is padded
    _same(mlmprob.pll(mlm, SEQS, method=method), mlmprob.pll(mlm, enc.input_ids, method=method))
    _same(mlmprob.pll(mlm, SEQS[1], method=method), mlmprob.pll(mlm, mlm.encode([SEQS[1]]).input_ids, method=method))


def test_energies_token_scores_positions_and_whole_words_of_text(mlm):
    enc = mlm.encode(SEQS)
    _same(mlmprob.energy(mlm, SEQS, kind="raw"), mlmprob.energy(mlm, enc.input_ids, kind="raw"))
    a, b = mlmprob.token_scores(mlm, tuple(SEQS)), mlmprob.token_scores(mlm, enc.input_ids)
    for k in ("log_prob", "raw", "positions"):
        _same(getattr(a, k), getattr(b, k))
    _same(mlmprob.pll(mlm, SEQS, positions=[2, 3]), mlmprob.pll(mlm, enc.input_ids, positions=[2, 3]))
    _same(mlmprob.pll(mlm, SEQS, word_ids=enc.word_ids), mlmprob.pll(mlm, enc.input_ids, word_ids=enc.word_ids))


def test_loglik_of_text_is_the_loglik_of_its_ids_bit_for_bit(mlm):
    enc = mlm.encode(SEQS)
    a, b = mlmprob.loglik(mlm, SEQS, n_orders=3, seed=5), mlmprob.loglik(mlm, enc.input_ids, n_orders=3, seed=5)
    for k in ("per_order", "step_log_prob", "orders", "positions"):
        _same(getattr(a, k), getattr(b, k))


def test_a_protein_model_scores_text(esm):
    seqs = ["MKTAYIAKQR", "MKTAY"]
    _same(mlmprob.pll(esm, seqs), mlmprob.pll(esm, esm.encode(seqs).input_ids))


def test_text_for_a_model_without_a_tokenizer_says_give_ids():
    m = LookupMLM(3, 4, seed=0)
    with pytest.raises(MLMProbError, match="^input_ids is text, but .* has no tokenizer: give token ids"):
        mlmprob.pll(m, ["AB"])


def test_a_sequence_the_tokenizer_refuses_is_named(mlm):
    with pytest.raises(MLMProbError, match="sequence 1"):
        mlmprob.pll(mlm, ["ACDEF", "ACDXZ"])
