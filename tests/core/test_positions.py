"""The one positions rule (``mlmprob.positions``): each rule's default on a padded batch with masks, special
tokens and multi-token words; explicit positions checked once; a :class:`Resolved` mask passed down as it
is; what users type (1-based residue/word numbers) as token masks."""

import pytest
import torch

from mlmprob import load_mlm
from mlmprob.errors import MLMProbError, PositionsError
from mlmprob.models.spec import ModelSpec
from mlmprob.positions import (
    RULES,
    TOKENS,
    TOKENS_AND_MASKS,
    WORDS_AND_MASKS,
    Resolved,
    default_mask,
    parse_numbers,
    resolve,
    word_mask,
    word_positions,
)


@pytest.fixture(scope="module")
def batch(tiny_bert):
    """Residue tokenizer: <cls> A C _ E <sep> / <cls> A C <sep> <pad> <pad> (mask id 3, pad 1)."""
    enc = tiny_bert.encode(["AC_E", "AC"])
    assert enc.input_ids.tolist() == [[0, 4, 5, 3, 7, 2], [0, 4, 5, 2, 1, 1]]
    return enc


@pytest.fixture(scope="module")
def en():
    return load_mlm("en-small", device="cpu")


def test_each_rule_default_on_masks_specials_and_padding(tiny_bert, batch):
    ids = batch.input_ids
    tokens = [[False, True, True, False, True, False], [False, True, True, False, False, False]]
    with_masks = [[False, True, True, True, True, False], tokens[1]]
    assert default_mask(tiny_bert, ids, TOKENS).tolist() == tokens
    assert default_mask(tiny_bert, ids, TOKENS_AND_MASKS).tolist() == with_masks
    # the residue tokenizer numbers the mask character as a residue: words and masks = tokens and masks
    assert default_mask(tiny_bert, ids, WORDS_AND_MASKS, word_ids=batch.word_ids).tolist() == with_masks
    assert resolve(tiny_bert, ids, None, TOKENS).tolist() == tokens
    assert resolve(tiny_bert, ids, None, TOKENS_AND_MASKS).tolist() == with_masks
    with pytest.raises(MLMProbError, match="needs the encoding's word ids"):
        default_mask(tiny_bert, ids, WORDS_AND_MASKS)
    assert {r.name for r in RULES} == {"tokens", "tokens and masks", "words and masks"}


def test_words_of_several_tokens_and_a_special_mask(en):
    """en-small: 'unbelievable' is five word pieces of one word; its [MASK] is a special token (word id -1)."""
    enc = en.encode(["the unbelievable cat sat", "a [MASK] dog"])
    ids, words = enc.input_ids, enc.word_ids
    assert words[0].tolist() == [-1, 0, 1, 1, 1, 1, 1, 2, 3, -1] and int(ids[1, 2]) == en.mask_id
    default = default_mask(en, ids, WORDS_AND_MASKS, word_ids=words)
    assert default[0].tolist() == [False] + [True] * 8 + [False]
    assert default[1].tolist() == [False, True, True, True] + [False] * 6  # the mask in, padding out
    assert default_mask(en, ids, TOKENS)[1].tolist() == [False, True, False, True] + [False] * 6
    assert torch.equal(default_mask(en, ids, TOKENS_AND_MASKS), default)
    assert word_mask(words[0], [2]).tolist() == [False, False] + [True] * 5 + [False] * 3
    assert word_positions(words[0], [4, 2]) == [2, 3, 4, 5, 6, 8]
    with pytest.raises(MLMProbError, match="position 5 is outside the sequence's 4 residues/words"):
        word_mask(words[0], [5])
    with pytest.raises(MLMProbError, match="position 0 is outside"):
        word_mask(words[0], [0])


def test_explicit_positions_are_checked_by_the_rule(tiny_bert, batch):
    ids = batch.input_ids
    assert resolve(tiny_bert, ids, [1, 2], TOKENS).tolist() == [[False, True, True, False, False, False]] * 2
    with pytest.raises(PositionsError, match="position 3 of sequence 0 holds the mask token; a scored position"):
        resolve(tiny_bert, ids, [1, 3], TOKENS)
    with pytest.raises(PositionsError, match="position 3 of sequence 0 holds the mask token but is not among the free"):
        resolve(tiny_bert, ids, [1, 2], TOKENS_AND_MASKS)
    assert resolve(tiny_bert, ids[:1], [1, 3], TOKENS_AND_MASKS).tolist() == [[False, True, False, True, False, False]]
    for rule in RULES:
        with pytest.raises(PositionsError, match="position 4 is padding in sequence 1"):
            resolve(tiny_bert, ids, [4], rule, word_ids=batch.word_ids)
        with pytest.raises(PositionsError, match="outside sequences of length 6"):
            resolve(tiny_bert, ids, [6], rule, word_ids=batch.word_ids)
    none = torch.zeros_like(ids, dtype=torch.bool)
    with pytest.raises(PositionsError, match="sequence 0 has no position to score"):
        resolve(tiny_bert, ids[1:], none[1:], TOKENS)
    with pytest.raises(PositionsError, match="sequence 0 has no free position to sample"):
        resolve(tiny_bert, ids[1:], none[1:], TOKENS_AND_MASKS)
    assert not resolve(tiny_bert, ids[1:], none[1:], TOKENS, allow_empty_rows=True).any()


def test_a_resolved_mask_is_passed_down_not_resolved_again(tiny_bert, batch, monkeypatch):
    import mlmprob.positions as P

    ids = batch.input_ids
    free = resolve(tiny_bert, ids, None, WORDS_AND_MASKS, word_ids=batch.word_ids)
    calls = []
    monkeypatch.setattr(P, "_explicit", lambda *a: calls.append(a))
    got = resolve(tiny_bert, ids, Resolved(free, WORDS_AND_MASKS), TOKENS_AND_MASKS)
    assert torch.equal(got, free) and got is not free and calls == []
    with pytest.raises(PositionsError, match="cannot stand for 'tokens'"):
        resolve(tiny_bert, ids, Resolved(free, WORDS_AND_MASKS), TOKENS)
    with pytest.raises(PositionsError, match="resolved positions have shape"):
        resolve(tiny_bert, ids[:1], Resolved(free, WORDS_AND_MASKS), TOKENS_AND_MASKS)


def test_a_streamed_sample_request_resolves_its_positions_once(tiny_bert, monkeypatch):
    """``SampleJob``: ``free_positions`` resolves the record's positions; ``sample`` takes the
    :class:`Resolved` mask as it is (before, the request resolved them four times)."""
    import mlmprob.positions as P
    from mlmprob.runtime.inputs import Record
    from mlmprob.sampling.spec import SamplerSpec
    from mlmprob.sampling.stream import SampleJob

    full, passed = [], []
    explicit, resolved = P._explicit, P._resolved
    monkeypatch.setattr(P, "_explicit", lambda *a: full.append(1) or explicit(*a))
    monkeypatch.setattr(P, "_resolved", lambda *a: passed.append(1) or resolved(*a))
    job = SampleJob(model_spec=ModelSpec("unused"), spec=SamplerSpec(epochs=1, burn_in=0), chains=2, positions=(2, 3))
    r = job.sample_record(tiny_bert, Record("r1", "ACDE"))
    assert full == [1] and passed == [1]
    assert r.free.tolist() == [[False, False, True, True, False, False]] * 2


def test_parse_numbers_is_one_based():
    assert parse_numbers("1,3-4; 9") == [1, 3, 4, 9]
    for bad, msg in (
        ("0", "position 0; positions count from 1: they are residue/word numbers, 1-based"),
        ("2,0-1", "position 0; positions count from 1"),
        ("-1", "count from 1"),
        ("", "is empty"),
        ("4-2", "runs backwards"),
        ("2,2", "given twice"),
        ("a", r"numbers or ranges like 3,5,10-12 \(1-based\)"),
    ):
        with pytest.raises(MLMProbError, match=msg):
            parse_numbers(bad, "--positions")


def test_parse_numbers_refuses_a_huge_range_before_building_it():
    """``1-1000000000`` was a MemoryError traceback (a billion-element list) in sample and design --positions."""
    with pytest.raises(MLMProbError, match=r"range '1-1000000000' names more than 1,000,000 positions"):
        parse_numbers("1-1000000000", "--positions")
    with pytest.raises(MLMProbError, match="more than 1,000,000"):
        parse_numbers("1-600000,600001-1200000", "--positions")
    assert len(parse_numbers("1-1000000")) == 10**6
    with pytest.raises(MLMProbError, match="position 999999 is given twice"):
        parse_numbers("1-999998,999999,999999")  # found in one pass (not a count per number)


def test_the_docs_table_names_every_rule_and_no_other():
    """docs/positions.md's table of rules has one row per rule of the module (by its constant's name)."""
    import re
    from pathlib import Path

    import mlmprob.positions as P

    text = (Path(__file__).resolve().parents[2] / "docs" / "positions.md").read_text()
    rows = re.findall(r"^\| `([A-Z_]+)` \|", text, re.M)
    names = sorted(k for k, v in vars(P).items() if isinstance(v, P.Rule))
    assert sorted(rows) == names == ["TOKENS", "TOKENS_AND_MASKS", "WORDS_AND_MASKS"]
    assert [getattr(P, n) for n in ("TOKENS", "TOKENS_AND_MASKS", "WORDS_AND_MASKS")] == list(RULES)
