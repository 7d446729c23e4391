"""The ProteinGym mutant-string parser: every malformed form, round trips, and token mapping."""

import pytest
import torch

from mlmprob import score_variants
from mlmprob.errors import MLMProbError
from mlmprob.models.tokenizers import Encoding
from mlmprob.variants.mutations import Mutation, encode_variants, parse_mutant, parse_mutants

SEQ = "MKTAYIAKQR"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "row 3: empty mutant string"),
        ("   ", "row 3: empty mutant string"),
        (None, "row 3: the mutant must be a string"),
        ("K2E:", "row 3: empty mutation in 'K2E:'"),
        (":K2E", "empty mutation"),
        ("K2E::T3A", "empty mutation"),
        ("K2", "'K2' is not of the form A23C"),
        ("2E", "'2E' is not of the form A23C"),
        ("KE", "'KE' is not of the form A23C"),
        ("K2.5E", "not of the form"),
        ("K+2E", "not of the form"),
        ("KK2E", "not of the form"),
        ("K2EE", "not of the form"),
        ("K 2E", "not of the form"),
        ("K2E,T3A", "not of the form"),
        ("K2E;T3A", "not of the form"),
        ("M0A", "residue 0 of 'M0A' is outside the sequence \\(residues 1..10\\)"),
        ("R11A", "residue 11 of 'R11A' is outside"),
        ("M-1A", "residue -1 of 'M-1A' is outside"),
        ("A2E", "'A2E' states wild-type 'A' at residue 2, but the sequence has 'K' there"),
        ("k2E", "states wild-type 'k'"),
        ("K2J", "mutant residue 'J' in 'K2J' is not in the alphabet"),
        ("K2X", "mutant residue 'X'"),
        ("K2*", "mutant residue '\\*'"),
        ("K2e", "mutant residue 'e'"),
        ("K2E:K2A", "residue 2 is mutated twice in 'K2E:K2A'"),
        ("K2E:T3A:K2E", "mutated twice"),
    ],
)
def test_every_malformed_mutant_is_named(text, message):
    with pytest.raises(MLMProbError, match=message) as e:
        parse_mutant(text, SEQ, row=3)
    assert "\n" not in str(e.value)


def test_offset_and_alphabet():
    assert parse_mutant("K25E", SEQ, offset=24) == (Mutation("K", 1, "E"),)
    assert parse_mutant("M-3A", SEQ, offset=-3) == (Mutation("M", 0, "A"),)
    with pytest.raises(MLMProbError, match="residues 24..33"):
        parse_mutant("K2E", SEQ, offset=24)
    assert parse_mutant("K2X", SEQ, alphabet="ACDEFGHIKLMNPQRSTVWYX") == (Mutation("K", 1, "X"),)
    assert parse_mutant(" K2E : T3A ", SEQ) == (Mutation("K", 1, "E"), Mutation("T", 2, "A"))
    assert parse_mutant("K2K", SEQ) == (Mutation("K", 1, "K"),)  # synonymous: accepted, scores 0


def test_rows_are_named_and_labels_round_trip():
    g = torch.Generator().manual_seed(0)
    letters = "ACDEFGHIKLMNPQRSTVWY"
    texts = []
    for _ in range(200):
        k = int(torch.randint(1, 4, (1,), generator=g))
        idx = torch.randperm(len(SEQ), generator=g)[:k].tolist()
        texts.append(":".join(f"{SEQ[i]}{i + 7}{letters[int(torch.randint(20, (1,), generator=g))]}" for i in idx))
    parsed = parse_mutants(texts, SEQ, offset=7)
    assert [":".join(m.label(7) for m in ms) for ms in parsed] == texts
    with pytest.raises(MLMProbError, match="row 1: "):
        parse_mutants(["K2E", "K2"], SEQ)
    with pytest.raises(MLMProbError, match="row line 3: "):
        parse_mutants(["K2E", "K2"], SEQ, rows=["line 2", "line 3"])
    with pytest.raises(MLMProbError, match="without white space"):
        parse_mutants(["K2E"], "MK TA")
    with pytest.raises(MLMProbError, match="non-empty string"):
        parse_mutants(["K2E"], "")


def test_encode_variants_maps_residues_to_tokens(tiny_bert):
    seq = "ACDEFGHIKLACD"
    ev = encode_variants(tiny_bert, seq, ["C2A", "A1D:K9L"], alphabet="ACDEFGHIKL")
    tok = tiny_bert.tokenizer
    assert ev.wild_type.tolist() == tiny_bert.encode([seq]).input_ids[0].tolist()
    assert ev.residue_positions.tolist() == list(range(1, 14))
    assert ev.variants == [[(2, tok.token_to_id["A"])], [(1, tok.token_to_id["D"]), (9, tok.token_to_id["L"])]]
    s = score_variants(tiny_bert, ev.wild_type, ev.variants, methods=["masked_marginals"])
    assert torch.isfinite(s["masked_marginals"]).all()
    with pytest.raises(MLMProbError, match="alphabet 'ACY' does not fit"):
        encode_variants(tiny_bert, seq, ["C2A"], alphabet="ACY")


class TwoTokensPerResidue:
    mask_id, pad_id, vocab_size = 9, 0, 10

    def encode(self, texts):
        n = len(texts[0])
        ids = torch.arange(1, 2 * n + 1)[None] % 9
        words = torch.arange(2 * n)[None] // 2
        return Encoding(ids, words, torch.tensor([2 * n]))


def test_subword_models_are_refused():
    with pytest.raises(MLMProbError, match="one token per residue"):
        encode_variants(TwoTokensPerResidue(), "MKT", ["K2E"])
