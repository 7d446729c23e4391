"""Red-team, second round: what a notebook passes by mistake to the scoring API (text instead of token ids, None,
a special token's index) is one MLMProbError naming the argument, never torch's message or a silent number."""

import pytest
import torch
from conftest import tiny_hf

import mlmprob
from mlmprob import MLMProbError
from mlmprob.errors import PositionsError


@pytest.fixture(scope="module")
def bert():
    return tiny_hf("bert")


@pytest.fixture(scope="module")
def ids(bert):
    return bert.encode(["ACDEF"]).input_ids  # [CLS] A C D E F [SEP]


SCORERS = {
    "pll": lambda m, x, **kw: mlmprob.pll(m, x, **kw),
    "energy": lambda m, x, **kw: mlmprob.energy(m, x, **kw),
    "token_scores": lambda m, x, **kw: mlmprob.token_scores(m, x, **kw),
    "loglik": lambda m, x, **kw: mlmprob.loglik(m, x, n_orders=1, **kw),
}


@pytest.mark.parametrize("name", SCORERS)
@pytest.mark.parametrize("text", ["ACDEF", ["ACDEF"], ("ACDEF",)])
def test_text_is_scored_as_its_ids(bert, ids, name, text):
    # issue 52: the scoring entry points take sequences (they said "encode text first"); tests/core/test_score_text.py
    # compares the two paths bit for bit on padded batches
    def numbers(r):  # a tensor [B], TokenScores' log_prob, LogLik's per_order
        return r if isinstance(r, torch.Tensor) else getattr(r, "log_prob", getattr(r, "per_order", None))

    assert torch.equal(numbers(SCORERS[name](bert, text)), numbers(SCORERS[name](bert, ids)))


@pytest.mark.parametrize("name", SCORERS)
@pytest.mark.parametrize("mixed", [["ACDEF", None], ["ACDEF", [4, 5, 6]], ("ACDEF", 3)])
def test_text_mixed_with_anything_else_names_the_argument(bert, name, mixed):
    with pytest.raises(MLMProbError, match=r"^input_ids mixes text and token ids: give sequences \(strings\) or token"):
        SCORERS[name](bert, mixed)


@pytest.mark.parametrize("text", ["ACDEF", ["ACDEF"]])
def test_the_sampler_takes_text_too(bert, ids, text):
    # issue 52: it said "encode text first"; now text starts the chains its ids start (tests/sampling/test_sample_text.py)
    def run(x):
        return mlmprob.sample(bert, x, epochs=1, generator=torch.Generator().manual_seed(0)).final_ids

    assert torch.equal(run(text), run(ids))
    with pytest.raises(MLMProbError, match=r"^init_ids mixes text and token ids"):
        mlmprob.sample(bert, ["ACDEF", None], epochs=1)


@pytest.mark.parametrize("name", SCORERS)
@pytest.mark.parametrize("bad", [None, [[1, 2], [3]], 3, 2.5, True, b"ACDEF"])
def test_none_ragged_or_a_number_names_the_argument(bert, name, bad):
    with pytest.raises(MLMProbError, match="input_ids must be integer token ids"):
        SCORERS[name](bert, bad)


@pytest.mark.parametrize("name", SCORERS)
def test_an_empty_list_is_empty_not_a_float_dtype(bert, name):
    for empty in ([], ()):
        with pytest.raises(
            MLMProbError, match="^input_ids is empty: give a sequence, a list of sequences or token ids"
        ):
            SCORERS[name](bert, empty)


@pytest.mark.parametrize("name", ["pll", "energy", "token_scores"])
@pytest.mark.parametrize("where", [[0], [-1], [1, 6]])
def test_a_special_token_given_as_a_position_is_refused(bert, ids, name, where):
    # it was scored: pll(positions=[0]) gave the log-probability of [CLS] at the CLS slot, a silent wrong number
    with pytest.raises(PositionsError, match="holds the special token .* never scored"):
        SCORERS[name](bert, ids, positions=where)
    assert SCORERS[name](bert, ids, positions=[1, 5]) is not None  # the residues still are


@pytest.mark.parametrize("name", SCORERS)
@pytest.mark.parametrize("bad", ["1,2", [1, None]])
def test_positions_that_are_not_indices_name_the_argument(bert, ids, name, bad):
    with pytest.raises(PositionsError, match="positions must be a list of integer token indices"):
        SCORERS[name](bert, ids, positions=bad)


@pytest.mark.parametrize("correction", [3, True, ["x.safetensors"]])
def test_a_one_pass_correction_that_is_not_one_is_named(bert, ids, correction):
    # it was pathlib's "expected str, bytes or os.PathLike object, not int"
    with pytest.raises(MLMProbError, match="correction must be a Correction, a file path or None"):
        mlmprob.pll(bert, ids, method="one_pass", correction=correction)


@pytest.mark.parametrize("bad", [None, 3, b"ACDEF"])
def test_encode_of_something_that_is_no_text_names_it(bert, bad):
    # None and 3 were Python's "'NoneType' object is not iterable"; bytes were split into numbers
    with pytest.raises(MLMProbError, match=f"encode takes a text or a list of texts, got {type(bad).__name__}"):
        bert.encode(bad)
    assert bert.encode("ACDEF").input_ids.shape == (1, 7)  # one text is still one sequence


@pytest.mark.parametrize("name", ["pll", "energy", "token_scores"])
@pytest.mark.parametrize("bad", ["x", [["a", "b"]]])
def test_word_ids_that_are_not_numbers_name_the_argument(bert, ids, name, bad):
    # was torch's "new(): invalid data type 'str'"
    with pytest.raises(PositionsError, match=r"word_ids must be integer word numbers \[B, L\]"):
        SCORERS[name](bert, ids, word_ids=bad)


def test_a_progress_that_is_not_a_function_is_refused(bert, ids):
    # was "'int' object is not callable" after the first sub-batch had run
    with pytest.raises(MLMProbError, match="progress must be a function of the rows finished, or None; got 3"):
        mlmprob.token_scores(bert, ids, progress=3)
    seen = []
    mlmprob.token_scores(bert, ids, progress=seen.append)
    assert sum(seen) > 0


@pytest.mark.parametrize("bad", ["AC", ["A", "C"], {"A": 1}])
def test_candidates_that_are_not_ids_name_the_argument(bert, ids, bad):
    # "AC" was torch's "new(): invalid data type 'str'"
    with pytest.raises(MLMProbError, match="candidates must be a non-empty 1-D list of token ids"):
        mlmprob.pairwise_joint(bert, ids[0], 2, 3, candidates=bad)


def test_train_config_refuses_a_negative_seed():
    # the CLI's --seed is non-negative; TrainConfig(seed=-1) was accepted
    from mlmprob.training import TrainConfig

    with pytest.raises(MLMProbError, match="seed must be a non-negative integer, got -1"):
        TrainConfig(seed=-1)
    assert TrainConfig(seed=0).seed == 0


@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_scoring_pairs_and_gaps_refuse_the_same_positions(kind):
    # one definition of a special slot (Reader.special_at): scoring used "not a default position", pairs and gaps
    # "in special_ids minus the mask"; a slot one refused and another took would be a number of no residue
    from mlmprob.infilling.gap import prepare_gap
    from mlmprob.joints.conditionals import check_pair

    m = tiny_hf(kind)
    ids = m.encode(["ACDEF"]).input_ids
    ids[0, 3] = m.mask_id  # a mask inside stands for a residue: pairs and gaps take it
    refused = {}
    for t in range(ids.shape[1]):
        other = 2 if t != 2 else 4
        verdicts = []
        for call in (
            lambda: mlmprob.pll(m, ids.masked_fill(ids == m.mask_id, ids[0, 1]), positions=[t]),
            lambda: check_pair(m, ids[0], t, other),
            lambda: prepare_gap(m, ids[0], [t]),
        ):
            try:
                call()
                verdicts.append(False)
            except PositionsError:
                verdicts.append(True)
        assert len(set(verdicts)) == 1, (t, verdicts)
        refused[t] = verdicts[0]
    assert [t for t, r in refused.items() if r] == [0, ids.shape[1] - 1]  # [CLS] and [SEP] / <cls> and <eos>
