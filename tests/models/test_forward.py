"""The one forward primitive (models/forward.py): every algorithm finishes through out-of-memory halving with
the results it gives without it, and a record's logits never depend on the records computed beside it."""

import pytest
import torch
from conftest import DeviceOOMAbove, OOMAbove, tiny_hf

import mlmprob
from mlmprob import LookupMLM
from mlmprob.errors import MLMProbError
from mlmprob.models.forward import GivenRows, forward_all, plan_groups
from mlmprob.models.windowed import WindowedMLM


def _algorithms(m, gen):
    """Every family of reads, as ``name -> thunk`` returning tensors to compare."""
    V, T = m.vocab_size, 6
    ids = torch.randint(0, V, (3, T), generator=torch.Generator().manual_seed(0))
    wt = ids[0]
    variants = [
        [(1, (int(wt[1]) + 1) % V)],
        [(0, (int(wt[0]) + 1) % V), (3, (int(wt[3]) + 2) % V)],
        [(2, (int(wt[2]) + 1) % V), (4, (int(wt[4]) + 1) % V), (5, (int(wt[5]) + 1) % V)],
    ]

    def variants_all():
        s = mlmprob.score_variants(m, wt, variants, methods=None)  # every method
        return torch.stack([s[k] for k in sorted(s)])

    def pair():
        ev = mlmprob.evaluate_pair(m, wt, 1, 4)
        return torch.stack([ev.joints[k] for k in sorted(ev.joints)])

    def fills(method):
        pivot = 0 if method == "hcb" else None  # the lookup model has no output entry for the mask
        return torch.tensor(
            [c.score for c in mlmprob.infill(m, wt, [1, 2, 3], method=method, order="best", beam_size=3, pivot=pivot)]
        )

    def chains(method):
        r = mlmprob.sample(m, ids, method=method, energy="local", epochs=2, generator=torch.Generator().manual_seed(3))
        return r.samples.double()

    return {
        "pll": lambda: mlmprob.pll(m, ids),
        "token_scores": lambda: mlmprob.token_scores(m, ids).raw,
        "score_variants": variants_all,
        "evaluate_pair": pair,
        "infill_standard": lambda: fills("standard"),
        "infill_hcb": lambda: fills("hcb"),
        "sample_mh": lambda: chains("mh"),
        "sample_gibbs": lambda: chains("gibbs"),
    }


def _windowed(wrap):
    """PLL of 6-token rows through 4-token windows of a lookup model (wrapped by ``wrap``)."""
    ids = torch.randint(0, 3, (3, 6), generator=torch.Generator().manual_seed(2))
    return mlmprob.pll(WindowedMLM(wrap(LookupMLM(3, 4, seed=5)), 4), ids)


@pytest.mark.parametrize("name", list(_algorithms(LookupMLM(3, 6, seed=1), None)))
def test_every_algorithm_finishes_through_out_of_memory_with_the_same_results(name, capsys):
    ref = _algorithms(LookupMLM(3, 6, seed=1), None)[name]()
    fake = OOMAbove(LookupMLM(3, 6, seed=1), 2)
    got = _algorithms(fake, None)[name]()
    torch.testing.assert_close(got, ref, atol=1e-12, rtol=0, equal_nan=True)  # NaN: a method undefined there
    assert max(fake.calls) > 2 or name == "score_variants"  # the wrapper was hit (variant rows go one by one)
    assert sum(c > 2 for c in fake.calls) <= 3  # halved until it fits, then the smaller size is kept
    err = capsys.readouterr().err
    assert err.count("out of memory") <= 1


def test_the_windowed_model_finishes_through_out_of_memory_with_the_same_results():
    ref = _windowed(lambda m: m)
    fakes = []
    got = _windowed(lambda m: fakes.append(OOMAbove(m, 2)) or fakes[0])
    torch.testing.assert_close(got, ref, atol=1e-12, rtol=0)
    assert max(fakes[0].calls) > 2


def test_out_of_memory_for_a_single_row_is_one_clear_error():
    with pytest.raises(MLMProbError, match="out of memory even for one copy"):
        mlmprob.pll(OOMAbove(LookupMLM(3, 6, seed=1), 0), torch.zeros(2, 6, dtype=torch.long))


def test_plan_never_mixes_groups_and_cuts_a_group_by_itself():
    lengths = torch.tensor([4, 4, 4, 9, 9, 4, 4])
    groups = torch.tensor([2, 2, 2, 0, 0, 1, 1])
    order, plan = plan_groups(lengths, groups, torch.arange(7), batch_tokens=8)
    assert order.tolist() == [3, 4, 5, 6, 0, 1, 2]
    assert plan == [(0, 1, 9), (1, 1, 9), (2, 2, 4), (4, 2, 4), (6, 1, 4)]
    # group 2 alone is cut the same way
    order2, plan2 = plan_groups(lengths, groups, torch.tensor([0, 1, 2]), batch_tokens=8)
    assert order2.tolist() == [0, 1, 2] and plan2 == [(0, 2, 4), (2, 1, 4)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kind", ["bert", "roberta"])
def test_a_records_scores_are_bit_identical_whatever_its_neighbours(kind, dtype, one_thread):
    m = tiny_hf(kind)
    m.model.to(dtype)
    m.dtype = dtype
    seqs = ["ACDEFGHIKL" * 3, "ACD", "KLAKLAKDEFF", "GHIK" * 5, "EFGHIKLACDEACD"]
    alone = [mlmprob.token_scores(m, m.encode([s]).input_ids) for s in seqs]
    together = mlmprob.token_scores(m, m.encode(seqs).input_ids)
    shuffled = mlmprob.token_scores(m, m.encode(seqs[::-1]).input_ids)
    for b in range(len(seqs)):
        n = alone[b].raw.shape[1]
        assert torch.equal(together.raw[b, :n], alone[b].raw[0])
        assert torch.equal(together.log_prob[b, :n], alone[b].log_prob[0])
        assert torch.equal(shuffled.raw[len(seqs) - 1 - b, :n], alone[b].raw[0])


def test_given_rows_of_different_groups_are_forwarded_apart():
    class Shapes(LookupMLM):
        def __init__(self):
            super().__init__(3, 4, seed=0)
            self.shapes = []

        def logits(self, ids):
            self.shapes.append(tuple(ids.shape))
            return super().logits(ids)

    m = Shapes()
    ids = torch.randint(0, 3, (5, 4), generator=torch.Generator().manual_seed(1))
    out = forward_all(
        m, GivenRows(m, ids, groups=torch.tensor([0, 1, 0, 1, 2])), torch.arange(5), torch.zeros(5, dtype=torch.long)
    )
    assert m.shapes == [(2, 4), (2, 4), (1, 4)]
    torch.testing.assert_close(out, m.logits(ids)[:, 0].float(), atol=0, rtol=0)


def test_the_device_hot_path_backs_off_too(tiny_bert, capsys):
    ids = tiny_bert.encode(["ACDEFGHIKL", "KLA"]).input_ids
    ref = mlmprob.pll(tiny_bert, ids)
    fake = DeviceOOMAbove(tiny_bert, 3)
    torch.testing.assert_close(mlmprob.pll(fake, ids), ref, atol=1e-5, rtol=0)  # smaller shapes: float32 rounding
    assert fake.calls[0] == 10 and max(fake.calls[1:]) <= 5  # 10 copies -> 5 -> 2, kept
    assert capsys.readouterr().err.count("out of memory") == 1
