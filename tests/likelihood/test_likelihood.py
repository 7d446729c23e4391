"""``mlmprob.loglik`` (the chain rule over orders) against exact enumeration and a literal reference."""

import itertools
import math

import pytest
import torch

from mlmprob import ExactMLM, MLMProbError, loglik
from mlmprob.errors import PositionsError
from mlmprob.models.exact import LookupMLM, all_sequences


def brute_chain(mlm, x, order, extra_masked=(), allowed=None):
    """log p_sigma(x_order | rest) from scratch: one full forward per step, later steps masked.
    ``order`` is a list of steps, each a list of positions revealed together (read left to right)."""
    x = torch.as_tensor(x)
    flat = [p for step in order for p in step]
    total = 0.0
    for j, p in enumerate(flat):
        row = x.clone()
        row[flat[j:]] = mlm.mask_id
        row[list(extra_masked)] = mlm.mask_id
        logits = mlm.logits(row[None])[0, p].double()
        if allowed is not None:
            logits = logits.masked_fill(~allowed, float("-inf"))
        total += float(logits[x[p]] - torch.logsumexp(logits, -1))
    return total


def test_exact_mlm_every_order_gives_the_joint():
    m = ExactMLM.random(3, 3, generator=torch.Generator().manual_seed(0))
    seqs = all_sequences(3, 3)
    r = loglik(m, seqs, order="random", n_orders=6)
    assert r.per_order.shape == (27, 6) and bool(r.exact.all()) and r.n_orders.tolist() == [6] * 27
    truth = m.log_prob(seqs)
    assert torch.allclose(r.per_order, truth[:, None].expand(27, 6), atol=1e-5)
    assert torch.allclose(r.mixture, truth, atol=1e-5) and torch.allclose(r.elbo, truth, atol=1e-5)
    for kind in ("l2r", "r2l"):
        assert torch.allclose(loglik(m, seqs, order=kind).per_order[:, 0], truth, atol=1e-5)


@pytest.mark.parametrize("V,T", [(2, 3), (3, 3)])
def test_lookup_every_order_is_normalised_and_matches_the_literal_chain(V, T):
    m = LookupMLM(V, T, seed=V + T)
    seqs = all_sequences(V, T)
    orders = [list(p) for p in itertools.permutations(range(T))]
    r = loglik(m, seqs, order=orders)
    assert r.per_order.shape == (len(seqs), len(orders)) and not bool(r.exact.any())
    # each p_sigma sums to one over every sequence, and the orders disagree (incompatible conditionals)
    assert torch.allclose(r.per_order.exp().sum(0), torch.ones(len(orders), dtype=torch.float64), atol=1e-6)
    assert (r.per_order.max(1).values - r.per_order.min(1).values).max() > 0.1
    for n in range(0, len(seqs), 5):
        for k, o in enumerate(orders):
            assert r.per_order[n, k].item() == pytest.approx(brute_chain(m, seqs[n], [[p] for p in o]), abs=1e-5)
            assert r.orders[n, k].tolist() == o
    ref_mix = torch.logsumexp(r.per_order, 1) - math.log(len(orders))
    assert torch.allclose(r.mixture, ref_mix) and torch.allclose(
        r.mixture.exp().sum(), torch.tensor(1.0, dtype=torch.float64)
    )
    # "random" with n_orders >= T! enumerates the same orders: the same mixture, exact and deterministic
    e = loglik(m, seqs, order="random", n_orders=100)
    assert bool(e.exact.all()) and torch.allclose(e.mixture, r.mixture, atol=1e-9)
    assert torch.all(e.elbo <= e.mixture + 1e-12)


def test_random_orders_are_drawn_with_the_generator_and_distinct_orders_read_once():
    m = ExactMLM.random(2, 4, generator=torch.Generator().manual_seed(3))
    x = torch.tensor([[0, 1, 1, 0]])
    a = loglik(m, x, order="random", n_orders=5, generator=torch.Generator().manual_seed(7))
    b = loglik(m, x, order="random", n_orders=5, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a.orders, b.orders) and a.orders.shape == (1, 5, 4) and not bool(a.exact[0])
    for o in a.orders[0].tolist():
        assert sorted(o) == [0, 1, 2, 3]
    m.calls = 0
    e = loglik(m, x, order="random", n_orders=24)  # 24 orders x 4 steps, but only 4 * 2**3 distinct copies
    assert bool(e.exact[0]) and m.calls == 4 * 2**3


def test_subset_positions_give_the_conditional_likelihood():
    m = ExactMLM.random(3, 4, generator=torch.Generator().manual_seed(4))
    seqs = all_sequences(3, 4)
    r = loglik(m, seqs, positions=[1, 3], order="random", n_orders=2)
    lj = m.log_prob(seqs).view(3, 3, 3, 3)
    cond = lj - torch.logsumexp(lj, dim=(1, 3), keepdim=True)  # log p(x1, x3 | x0, x2)
    assert torch.allclose(r.per_order, cond.flatten()[:, None].expand(-1, 2), atol=1e-5)
    lk = LookupMLM(2, 4, seed=1)
    s2 = all_sequences(2, 4)
    q = loglik(lk, s2, positions=[0, 2], order=[[2, 0]])
    # normalised over x_S for every context x_{1,3}
    ctx = s2[:, [1, 3]] @ torch.tensor([2, 1])
    tot = torch.zeros(4, dtype=torch.float64).index_add_(0, ctx, q.per_order[:, 0].exp())
    assert torch.allclose(tot, torch.ones(4, dtype=torch.float64), atol=1e-6)
    assert q.per_order[5, 0].item() == pytest.approx(brute_chain(lk, s2[5], [[2], [0]]), abs=1e-5)


def test_rows_with_different_positions_have_their_own_orders():
    m = LookupMLM(2, 3, seed=5)
    x = torch.tensor([[0, 1, 1], [1, 0, 1]])
    sel = torch.tensor([[True, False, True], [True, True, True]])
    r = loglik(m, x, sel, order="random", n_orders=6)
    assert r.n_orders.tolist() == [2, 6] and r.per_order.shape == (2, 6)
    assert bool(r.per_order[0, 2:].isnan().all()) and not bool(r.per_order[1].isnan().any())
    assert r.orders[0, :2].tolist() == [[0, 2, -1], [2, 0, -1]]
    ref0 = [brute_chain(m, x[0], [[0], [2]]), brute_chain(m, x[0], [[2], [0]])]
    assert r.mixture[0].item() == pytest.approx(math.log(sum(math.exp(v) for v in ref0) / 2), abs=1e-5)
    assert r.elbo[0].item() == pytest.approx(sum(ref0) / 2, abs=1e-5)
    alone = loglik(m, x[1:], order="random", n_orders=6)  # a row's result does not depend on its neighbours
    assert torch.allclose(alone.per_order[0], r.per_order[1])


def test_whole_words_reveal_their_pieces_in_one_step():
    m = LookupMLM(2, 4, seed=2)
    seqs = all_sequences(2, 4)
    words = torch.tensor([0, 0, 1, 2]).expand(16, 4)
    r = loglik(m, seqs, word_ids=words, order="random", n_orders=6)
    assert r.n_orders.tolist() == [6] * 16 and bool(r.exact.all())
    assert torch.allclose(r.per_order.exp().sum(0), torch.ones(6, dtype=torch.float64), atol=1e-6)
    units = [[0, 1], [2], [3]]
    for n in (3, 10):
        for k, o in enumerate(r.orders[n].tolist()):
            perm = list(dict.fromkeys(next(i for i, u in enumerate(units) if p in u) for p in o))
            ref = brute_chain(m, seqs[n], [units[i] for i in perm])
            assert r.per_order[n, k].item() == pytest.approx(ref, abs=1e-5)
    r2l = loglik(m, seqs[3:4], word_ids=words[:1], order="r2l")
    assert r2l.orders[0, 0].tolist() == [3, 2, 0, 1]
    assert r2l.per_order[0, 0].item() == pytest.approx(brute_chain(m, seqs[3], [[3], [2], [0, 1]]), abs=1e-5)


class Restricted:
    """LookupMLM whose proposals are limited to some ids (like a protein model's 20 residues)."""

    def __init__(self, inner, proposal_ids):
        self.inner, self.proposal_ids = inner, proposal_ids
        self.mask_id, self.vocab_size, self.max_length = inner.mask_id, inner.vocab_size, inner.max_length

    def logits(self, ids):
        return self.inner.logits(ids)


def test_normalised_over_the_proposal_alphabet_with_the_outside_mass_reported():
    m = Restricted(LookupMLM(3, 3, seed=9), [0, 2])
    seqs = all_sequences(3, 3)
    inside = seqs[(seqs != 1).all(1)]
    r = loglik(m, inside, order="random", n_orders=6)
    assert torch.allclose(r.per_order.exp().sum(0), torch.ones(6, dtype=torch.float64), atol=1e-6)
    allowed = torch.tensor([True, False, True])
    for n in (0, 5):
        for k, o in enumerate(r.orders[n].tolist()):
            steps = [[p] for p in o]
            assert r.per_order[n, k].item() == pytest.approx(
                brute_chain(m, inside[n], steps, allowed=allowed), abs=1e-5
            )
            full = brute_chain(m, inside[n], steps)
            assert (r.per_order[n, k] + r.log_inside[n, k]).item() == pytest.approx(full, abs=1e-5)
    assert bool((r.outside_mass > 0).all()) and bool((r.outside_mass < 1).all())
    with pytest.raises(PositionsError, match="outside the model's proposal alphabet"):
        loglik(m, torch.tensor([[0, 1, 2]]))
    assert loglik(m, torch.tensor([[0, 1, 2]]), positions=[0, 2]).per_order.isfinite().all()


def test_bad_input_is_a_clear_error():
    m = LookupMLM(2, 3, seed=0)
    x = torch.tensor([[0, 1, 1]])
    with pytest.raises(MLMProbError, match="not a permutation of its scored positions"):
        loglik(m, x, order=[0, 1])
    with pytest.raises(MLMProbError, match="not a permutation"):
        loglik(m, x, order=[[0, 1, 1]])
    with pytest.raises(MLMProbError, match="n_orders must be a positive integer"):
        loglik(m, x, order="random", n_orders=0)
    with pytest.raises(MLMProbError, match="order must be one of"):
        loglik(m, x, order="sideways")
    with pytest.raises(MLMProbError, match="orders were given for 2 sequences"):
        loglik(m, x, order=torch.tensor([[[0, 1, 2]], [[0, 1, 2]]]))
    with pytest.raises(PositionsError, match="word_ids"):
        loglik(m, x, word_ids=torch.zeros(1, 2, dtype=torch.long))
