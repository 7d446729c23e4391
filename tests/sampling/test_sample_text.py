"""Strings in, chains out (issue 52): ``sample`` and ``mask_predict`` take a sequence or a list of sequences as the
scoring entry points do (:func:`mlmprob.energies.as_input_ids`): the model's tokenizer encodes them, right-padded as
``mlm.encode`` pads, and the run is the run of those ids, bit for bit, for every built-in method."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_hf

import mlmprob
from mlmprob import MLMProbError
from mlmprob.models.exact import LookupMLM
from mlmprob.sampling.spec import METHODS

pytestmark = pytest.mark.usefixtures("one_thread")
SEQS = ["ACDEFGHIKL", "GHIKA"]  # two lengths: the second row is padded


@pytest.fixture(scope="module")
def bert():
    return tiny_hf("bert")


def _run(mlm, x, method, **kw):
    return mlmprob.sample(mlm, x, method=method, epochs=2, generator=torch.Generator().manual_seed(0), **kw)


@pytest.mark.parametrize("method", METHODS)
def test_a_list_of_sequences_samples_as_its_ids(bert, method):
    ids = bert.encode(SEQS).input_ids
    assert (ids == 1).any()  # the batch is padded (<pad> is id 1)
    a, b = _run(bert, SEQS, method), _run(bert, ids, method)
    assert torch.equal(a.samples, b.samples) and torch.equal(a.free, b.free) and a.forward_rows == b.forward_rows
    assert (a.energy is None) == (b.energy is None) and (a.energy is None or torch.equal(a.energy, b.energy))


def test_one_sequence_is_one_chain_and_positions_and_reference_apply(bert):
    ids = bert.encode([SEQS[0]]).input_ids
    a = _run(bert, SEQS[0], "mh", positions=[2, 3, 4], reference=ids[0])
    b = _run(bert, ids, "mh", positions=[2, 3, 4], reference=ids[0])
    assert a.final_ids.shape == (1, ids.shape[1]) and torch.equal(a.samples, b.samples)
    assert torch.equal(a.identity, b.identity) and a.free[0].nonzero().flatten().tolist() == [2, 3, 4]
    assert bert.tokenizer.decode(a.final_ids[0])[::9] == "AL"  # positions 2..4 moved: A and L kept


@pytest.mark.parametrize("strategy", ["mask_predict", "easy_first"])
def test_mask_predict_fills_text_as_its_ids(bert, strategy):
    ids = bert.encode(SEQS).input_ids
    a = mlmprob.mask_predict(bert, SEQS, 2, strategy=strategy)
    b = mlmprob.mask_predict(bert, ids, 2, strategy=strategy)
    assert torch.equal(a.ids, b.ids) and torch.equal(a.history, b.history) and a.forward_rows == b.forward_rows
    one = mlmprob.mask_predict(bert, (SEQS[1],), 2, strategy=strategy)
    assert torch.equal(one.ids, mlmprob.mask_predict(bert, bert.encode([SEQS[1]]).input_ids, 2, strategy=strategy).ids)


def test_text_for_a_model_without_a_tokenizer_says_give_ids():
    m = LookupMLM(3, 4, seed=0)
    with pytest.raises(MLMProbError, match=r"^init_ids is text, but .* has no tokenizer: give token ids \[B, L\]$"):
        mlmprob.sample(m, "AB", epochs=1)
    with pytest.raises(MLMProbError, match="^init_ids is text, but .* has no tokenizer"):
        mlmprob.mask_predict(m, ["AB"], 2)


@pytest.mark.parametrize("bad", [["ACDEF", None], ["ACDEF", [4, 5, 6]], ("ACDEF", 3)])
def test_text_mixed_with_ids_names_the_argument(bert, bad):
    with pytest.raises(MLMProbError, match=r"^init_ids mixes text and token ids: give sequences \(strings\) or token"):
        mlmprob.sample(bert, bad, epochs=1)
    with pytest.raises(MLMProbError, match="^init_ids mixes text and token ids"):
        mlmprob.mask_predict(bert, bad, 2)


@pytest.mark.parametrize("bad", [[], ()])
def test_no_sequence_is_empty(bert, bad):
    with pytest.raises(MLMProbError, match="^init_ids is empty"):
        mlmprob.sample(bert, bad, epochs=1)


def test_a_residue_the_tokenizer_refuses_is_named(bert):
    with pytest.raises(MLMProbError, match="sequence 1"):
        mlmprob.sample(bert, ["ACDEF", "ACDXZ"], epochs=1)
