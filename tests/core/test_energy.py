"""PLL, E_raw and whole-word PLL against a brute-force loop (one forward per masked copy)."""

import pytest
import torch
from conftest import tiny_hf

import mlmprob
from mlmprob import ExactMLM, MLMProbError, energy, pll, token_scores
from mlmprob.errors import PositionsError
from mlmprob.models.protocol import gather_logits
from mlmprob.models.reader import reader_of


def brute(mlm, ids, positions, word_ids=None):
    """Literal definition: for each scored (b, t), mask t (and later sub-words of its word), one forward."""
    B, L = ids.shape
    lp = torch.zeros(B, dtype=torch.float64)
    raw = torch.zeros(B, dtype=torch.float64)
    for b in range(B):
        for t in range(L):
            if not positions[b, t]:
                continue
            x = ids[b].clone()
            x[t] = mlm.mask_id
            if word_ids is not None:
                for s in range(t + 1, L):
                    if word_ids[b, s] == word_ids[b, t] and word_ids[b, t] >= 0:
                        x[s] = mlm.mask_id
            logits = mlm.logits(x[None])[0, t].double()
            lp[b] += logits.log_softmax(-1)[ids[b, t]]
            raw[b] += logits[ids[b, t]]
    return lp, raw


def exact_pll(m: ExactMLM, ids):
    """PLL from the joint table directly: p(x_t | x_-t) = p(x) / sum_v p(x with t=v)."""
    out = []
    for x in ids.tolist():
        s = 0.0
        for t in range(len(x)):
            num = m.log_joint[tuple(x)]
            alts = []
            for v in range(m.vocab_size):
                y = list(x)
                y[t] = v
                alts.append(m.log_joint[tuple(y)])
            s += float(num - torch.logsumexp(torch.stack(alts), 0))
        out.append(s)
    return torch.tensor(out, dtype=torch.float64)


def test_pll_exact_mlm_equals_brute_force_and_joint():
    m = ExactMLM.random(4, 5, generator=torch.Generator().manual_seed(0))
    ids = torch.randint(0, 4, (6, 5), generator=torch.Generator().manual_seed(1))
    sel = torch.ones_like(ids, dtype=torch.bool)
    lp, raw = brute(m, ids, sel)
    assert torch.allclose(pll(m, ids), lp, atol=1e-5)
    assert torch.allclose(pll(m, ids), exact_pll(m, ids), atol=1e-5)
    assert torch.allclose(energy(m, ids, kind="raw"), -raw, atol=1e-5)
    assert torch.allclose(energy(m, ids, kind="local"), -lp, atol=1e-5)


def _ragged(mlm, seqs):
    return mlm.encode(seqs).input_ids


SEQS = ["ACDEFGHIK", "KLA", "GGHACDLKAEF", "DE"]


@pytest.mark.parametrize("kind", ["bert", "roberta", "distilbert"])
def test_pll_and_raw_hf_equal_brute_force(kind):
    mlm = tiny_hf(kind)
    ids = _ragged(mlm, SEQS)
    sel = reader_of(mlm).default_positions(ids)
    lp, raw = brute(mlm, ids[:, :], sel)
    # brute force on each row alone without padding, to check padding does not leak
    for b, s in enumerate(SEQS):
        one = mlm.encode([s]).input_ids
        lp1, raw1 = brute(mlm, one, reader_of(mlm).default_positions(one))
        assert torch.allclose(lp1, lp[b : b + 1], atol=1e-5)
    for bt in (7, 40, 10_000):  # sub-batches of 1 copy, a few copies, everything at once
        s = token_scores(reader_of(mlm, bt), ids)
        assert torch.allclose(s.pll, lp, atol=1e-5)
        assert torch.allclose(s.e_raw, -raw, atol=1e-4)


@pytest.mark.parametrize("kind", ["bert", "roberta", "distilbert"])
def test_logits_at_equals_full_logits(kind):
    mlm = tiny_hf(kind)
    ids = _ragged(mlm, SEQS)
    rows = torch.tensor([0, 1, 2, 2, 3])
    cols = torch.tensor([1, 2, 5, 9, 1])
    full = mlm.logits(ids)[rows, cols]
    assert torch.allclose(gather_logits(mlm, ids, rows, cols), full, atol=1e-5)


def test_whole_word_pll_equals_brute_force(tiny_bert):
    ids = _ragged(tiny_bert, ["ACDEFGHIK", "KLAGH"])
    word_ids = torch.tensor([[-1, 0, 0, 0, 1, 2, 2, 3, 3, 3, -1], [-1, 0, 1, 1, 1, 2, -1, -1, -1, -1, -1]])
    sel = reader_of(tiny_bert).default_positions(ids)
    lp, raw = brute(tiny_bert, ids, sel, word_ids)
    s = token_scores(tiny_bert, ids, word_ids=word_ids)
    assert torch.allclose(s.pll, lp, atol=1e-5)
    assert torch.allclose(s.e_raw, -raw, atol=1e-4)
    # one word per token gives back the ordinary PLL; words of several tokens change it
    singles = torch.where(word_ids >= 0, torch.arange(11).expand(2, 11), -1)
    assert torch.allclose(pll(tiny_bert, ids, word_ids=singles), pll(tiny_bert, ids), atol=1e-6)
    assert (s.pll - pll(tiny_bert, ids)).abs().max() > 0.05


def test_positions_list_and_mask(tiny_bert):
    ids = _ragged(tiny_bert, ["ACDEFGHIK", "KLAGHACDE"])
    sel = torch.zeros_like(ids, dtype=torch.bool)
    sel[:, [2, 4, 5]] = True
    lp, _ = brute(tiny_bert, ids, sel)
    assert torch.allclose(pll(tiny_bert, ids, [2, 4, 5]), lp, atol=1e-5)
    assert torch.allclose(pll(tiny_bert, ids, sel), lp, atol=1e-5)
    per = token_scores(tiny_bert, ids, [2, 4, 5])
    assert torch.equal(per.positions, sel) and per.n_tokens.tolist() == [3, 3]
    assert (per.log_prob[~sel] == 0).all() and (per.log_prob[sel] < 0).all()


def test_bad_input_errors(tiny_bert):
    ids = _ragged(tiny_bert, ["ACDEFGHIK", "KLA"])
    cases = [
        (lambda: pll(tiny_bert, ids[0]), "shape \\[B, L\\]"),
        (lambda: pll(tiny_bert, ids.float()), "integer"),
        (lambda: pll(tiny_bert, torch.zeros(0, 3, dtype=torch.long)), "empty"),
        (lambda: pll(tiny_bert, ids + 100), "vocabulary mismatch"),
        (lambda: pll(tiny_bert, ids, [3, 99]), "outside"),
        (lambda: pll(tiny_bert, ids, [3, 8]), "padding in sequence 1"),
        (lambda: pll(tiny_bert, ids, torch.ones(2, 3, dtype=torch.bool)), "shape"),
        (lambda: pll(tiny_bert, ids, [0.5]), "integer"),
        (lambda: pll(tiny_bert, ids, []), "no position to score"),
        (lambda: pll(tiny_bert, torch.tensor([[0, 2, 1, 1]])), "no position to score"),
        (lambda: pll(tiny_bert, torch.tensor([[0, 3, 4, 2]]), [1]), "mask token"),
        (lambda: pll(tiny_bert, torch.full((1, 70), 5)), "at most 64"),
        (lambda: energy(tiny_bert, ids, kind="global"), "'local' or 'raw'"),
        (lambda: tiny_bert.encode([""]), "empty"),
        (lambda: tiny_bert.encode(["ACZ"]), "'Z' at residue 3"),
        (lambda: tiny_bert.encode(["A" * 63]), "at most 62"),
        (lambda: token_scores(tiny_bert, ids, word_ids=torch.zeros(1, 3)), "word_ids has shape"),
    ]
    for fn, msg in cases:
        with pytest.raises(MLMProbError, match=msg) as e:
            fn()
        assert "\n" not in str(e.value)


def test_positions_error_is_exported():
    assert issubclass(PositionsError, mlmprob.MLMProbError)


def test_sampler_energies_are_the_energy_functions_numbers():
    # E_local/E_raw have one home (mlmprob.energy): the MH state's cached energies, from its single-site rows,
    # are bit for bit those of energy() on the same rows (ExactMLM: a row does not depend on its batch)
    from mlmprob.energies import energies_from_logits, target_scores
    from mlmprob.sampling import MetropolisHastings

    m = ExactMLM.random(4, 4, torch.Generator().manual_seed(3))
    ids = torch.tensor([[0, 1, 2, 3], [3, 3, 0, 1], [2, 0, 0, 2]])
    free = torch.tensor([[True, True, False, True], [False, True, True, True], [True, True, True, True]])
    s = MetropolisHastings(m).init(ids, free)
    assert torch.equal(s.e_local, energy(m, ids, free, kind="local"))
    assert torch.equal(s.e_raw, energy(m, ids, free, kind="raw"))
    e_local, e_raw = energies_from_logits(s.site_logits, ids, free)
    assert torch.equal(e_local, s.e_local) and torch.equal(e_raw, s.e_raw)
    ts = token_scores(m, ids, free)
    lp, raw = target_scores(s.site_logits, ids)
    assert torch.equal(lp[free], ts.log_prob[free]) and torch.equal(raw[free], ts.raw[free])


def test_a_string_where_token_ids_are_needed_is_named():
    """``score_variants(mlm, "ACDEF", ...)`` was torch's ``new(): invalid data type 'str'``."""
    from mlmprob.energies import as_row

    m = ExactMLM(torch.log(torch.full((2, 2, 2), 0.125)))
    with pytest.raises(
        MLMProbError, match=r"^wild_type must be integer token ids \(a tensor or a list of ints\), got str"
    ):
        mlmprob.score_variants(m, "ACD", [[(0, 1)]])
    with pytest.raises(MLMProbError, match="input_ids must be integer token ids .* got list"):
        as_row([[1, 2], [3]])
