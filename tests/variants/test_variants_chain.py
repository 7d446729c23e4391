"""The ``chain`` variant score against its brute-force definition, ``masked_marginals`` and ``loglik``."""

import itertools
import math

import pytest
import torch

from mlmprob import ExactMLM, LookupMLM, loglik, score_variants
from mlmprob.errors import MLMProbError
from mlmprob.variants.chain import site_orders

V, T = 4, 5
W = [2, 0, 3, 1, 2]
VARIANTS = [
    [(1, 2)],
    [(4, 0)],
    [(1, 2), (3, 0)],
    [(3, 0), (1, 2)],
    [(0, 1), (4, 3)],
    [(0, 0), (2, 1), (4, 1)],
    [(2, 3), (0, 1)],
]


def log_p_sigma(mlm, x, order):
    """log p_sigma(x_order | rest of x), one explicit row per step."""
    total = 0.0
    for j, i in enumerate(order):
        row = list(x)
        for s in order[j:]:
            row[s] = mlm.mask_id
        total += float(mlm.logits(torch.tensor([row]))[0, i].double().log_softmax(-1)[x[i]])
    return total


def brute_chain(mlm, w, v, orders):
    m = list(w)
    for p, t in v:
        m[p] = t

    def log_mix(x):
        return math.log(sum(math.exp(log_p_sigma(mlm, x, o)) for o in orders) / len(orders))

    return log_mix(m) - log_mix(w)


def test_chain_equals_its_definition_for_singles_doubles_and_triples():
    mlm = LookupMLM(vocab_size=V, length=T, seed=3)
    s = score_variants(mlm, torch.tensor(W), VARIANTS, methods=["chain", "masked_marginals", "hcb"])
    for n, v in enumerate(VARIANTS):
        sites = sorted(p for p, _ in v)
        want = brute_chain(mlm, W, v, [list(o) for o in itertools.permutations(sites)])
        assert s["chain"][n].item() == pytest.approx(want, abs=1e-9), v
    singles = [n for n, v in enumerate(VARIANTS) if len(v) == 1]
    assert torch.equal(s["chain"][singles], s["masked_marginals"][singles])
    multi = [n for n, v in enumerate(VARIANTS) if len(v) > 1]
    assert (s["chain"][multi] - s["hcb"][multi]).abs().max() > 0.05  # incompatible: not the HCB path
    assert s["chain"][2] == s["chain"][3]  # the order a variant is written in


def test_chain_is_the_difference_of_loglik_mixtures():
    mlm = LookupMLM(vocab_size=V, length=T, seed=4)
    v = [(0, 0), (2, 1), (4, 1)]
    m = list(W)
    for p, t in v:
        m[p] = t
    r = loglik(mlm, torch.tensor([m, W]), positions=[0, 2, 4], order="random", n_orders=6)
    got = score_variants(mlm, torch.tensor(W), [v], methods=["chain"])["chain"][0]
    assert got.item() == pytest.approx((r.mixture[0] - r.mixture[1]).item(), abs=1e-9)


def test_chain_is_the_exact_log_ratio_for_compatible_conditionals():
    exact = ExactMLM.random(3, 4, generator=torch.Generator().manual_seed(1))
    w = [0, 2, 1, 0]
    variants = [[(0, 1), (3, 2)], [(1, 0), (2, 2), (3, 1)]]
    s = score_variants(exact, torch.tensor(w), variants, methods=["chain"])["chain"]
    for n, v in enumerate(variants):
        m = list(w)
        for p, t in v:
            m[p] = t
        want = exact.log_prob(torch.tensor([m])) - exact.log_prob(torch.tensor([w]))
        assert s[n].item() == pytest.approx(want.item(), abs=1e-5)


def test_sampled_orders_are_seeded_by_the_sites_and_shared_by_mutant_and_wild_type():
    mlm = LookupMLM(vocab_size=V, length=T, seed=3)
    triple = [(0, 0), (2, 1), (4, 1)]
    orders = site_orders([0, 2, 4], 4, seed=5)
    assert len(orders) == 4 and all(sorted(o) == [0, 2, 4] for o in orders)
    alone = score_variants(mlm, torch.tensor(W), [triple], methods=["chain"], chain_orders=4, chain_seed=5)["chain"]
    among = score_variants(
        mlm, torch.tensor(W), VARIANTS[:5] + [triple], methods=["chain"], chain_orders=4, chain_seed=5
    )["chain"]
    assert alone[0] == among[-1]
    assert alone[0].item() == pytest.approx(brute_chain(mlm, W, triple, orders), abs=1e-9)
    other = score_variants(mlm, torch.tensor(W), [triple], methods=["chain"], chain_orders=4, chain_seed=6)["chain"]
    assert other[0] != alone[0]
    with pytest.raises(MLMProbError, match="n_orders"):
        score_variants(mlm, torch.tensor(W), [triple], methods=["chain"], chain_orders=0)


def test_chain_shares_rows_with_the_other_methods():
    mlm = LookupMLM(vocab_size=V, length=T, seed=3)
    mlm.calls = 0
    score_variants(mlm, torch.tensor(W), VARIANTS, methods=["masked_marginals", "hcb"])
    base = mlm.calls
    mlm.calls = 0
    score_variants(mlm, torch.tensor(W), VARIANTS, methods=["masked_marginals", "hcb", "chain"])
    with_chain = mlm.calls
    mlm.calls = 0
    score_variants(mlm, torch.tensor(W), VARIANTS, methods=["chain"])
    assert with_chain < base + mlm.calls  # the first step of every order is a masked_marginals row
