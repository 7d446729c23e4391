"""score_variants against brute-force enumeration on tiny models with incompatible conditionals
(LookupMLM), the exact log-ratio on a compatible ExactMLM, and forward-row sharing."""

import itertools

import pytest
import torch

import mlmprob
from mlmprob import ExactMLM, LookupMLM, score_variants
from mlmprob.errors import MLMProbError
from mlmprob.models.reader import reader_of
from mlmprob.variants import METHODS, ForwardCache

V, T = 4, 5
W = [2, 0, 3, 1, 2]


@pytest.fixture
def lookup():
    return LookupMLM(vocab_size=V, length=T, seed=3)


def some_variants():
    """Singles, doubles (two sharing a prefix site and value), a triple, and a synonymous site."""
    return [
        [(1, 2)],
        [(1, 3)],
        [(4, 0)],
        [(1, 2), (3, 0)],
        [(3, 0), (1, 2)],
        [(1, 2), (3, 2)],
        [(0, 1), (4, 3)],
        [(0, 0), (2, 1), (4, 1)],
        [(2, 3), (0, 1)],
    ]


def lp(mlm, row, col):
    return mlm.logits(torch.tensor([row]))[0, col].double().log_softmax(-1)


def brute(mlm, w, v, method):
    """The method's formula, one explicit row at a time."""
    M = mlm.mask_id
    S = sorted(p for p, _ in v)
    mut = dict(v)
    m = list(w)
    for p, t in v:
        m[p] = t

    def delta(row, i):
        out = lp(mlm, row, i)
        return float(out[mut[i]] - out[w[i]])

    def masked(x, positions):
        x = list(x)
        for p in positions:
            x[p] = M
        return x

    if method == "wt_marginals":
        return sum(delta(w, i) for i in S)
    if method == "masked_marginals":
        return sum(delta(masked(w, [i]), i) for i in S)
    if method == "masked_marginals_all":
        return sum(delta(masked(w, S), i) for i in S)
    if method == "masked_marginals_mt":
        return sum(delta(masked(m, [i]), i) for i in S)
    if method == "mutant_marginals":
        return sum(delta(m, i) for i in S)
    if method == "hcb":
        total = 0.0
        for j, i in enumerate(S):
            c = list(w)
            for s in S[:j]:
                c[s] = mut[s]
            total += delta(masked(c, [i]), i)
        return total
    if method == "pll_delta":
        return sum(float(lp(mlm, masked(m, [t]), t)[m[t]] - lp(mlm, masked(w, [t]), t)[w[t]]) for t in range(len(w)))
    if method == "ag":
        if len(S) != 2:
            return float("nan")
        a, b = S
        lj = mlmprob.pairwise_joint(mlm, torch.tensor(w), a, b, method="ag")
        return float(lj[mut[a], mut[b]] - lj[w[a], w[b]])
    if method == "epistasis":
        return brute(mlm, w, v, "hcb") - sum(brute(mlm, w, [(i, mut[i])], "masked_marginals") for i in S)
    raise ValueError(method)


def test_every_method_equals_brute_force(lookup):
    variants = some_variants()
    got = score_variants(lookup, torch.tensor(W), variants, methods=METHODS)
    assert list(got) == list(METHODS)
    for method in METHODS:
        want = torch.tensor([brute(lookup, W, v, method) for v in variants], dtype=torch.float64)
        assert got[method].dtype == torch.float64 and got[method].shape == (len(variants),)
        assert torch.allclose(got[method], want, atol=1e-9, equal_nan=True), method
    # the conditionals are incompatible: the methods really differ on multi-site variants
    assert (got["hcb"][3:] - got["masked_marginals"][3:]).abs().max() > 0.1
    assert (got["masked_marginals_all"] - got["masked_marginals"]).abs().max() > 0.1


def test_identities(lookup):
    variants = some_variants()
    s = score_variants(lookup, torch.tensor(W), variants, methods=METHODS)
    singles = [k for k, v in enumerate(variants) if len(v) == 1]
    assert torch.equal(s["hcb"][singles], s["masked_marginals"][singles])
    assert torch.equal(s["masked_marginals_mt"][singles], s["masked_marginals"][singles])
    assert torch.equal(s["masked_marginals_all"][singles], s["masked_marginals"][singles])
    assert s["epistasis"][singles].eq(0).all()
    assert torch.isnan(s["ag"][[k for k, v in enumerate(variants) if len(v) != 2]]).all()
    assert torch.equal(s["hcb"][3], s["hcb"][4])  # the order a variant is written in does not matter
    # pll_delta is the difference of mlmprob.pll
    m = torch.tensor(W).repeat(len(variants), 1)
    for k, v in enumerate(variants):
        for p, t in v:
            m[k, p] = t
    want = mlmprob.pll(lookup, m) - mlmprob.pll(lookup, torch.tensor([W]))
    assert torch.allclose(s["pll_delta"], want, atol=1e-9)
    # ag is read off pairwise_joint
    lj = mlmprob.pairwise_joint(lookup, torch.tensor(W), 0, 4, method="ag")
    assert abs(float(s["ag"][6]) - float(lj[1, 3] - lj[W[0], W[4]])) < 1e-12


def test_hcb_is_the_exact_log_ratio_for_compatible_conditionals():
    exact = ExactMLM.random(3, 4, generator=torch.Generator().manual_seed(1))
    w = [0, 2, 1, 0]
    variants = [
        list(zip(S, vals))
        for S in [(0,), (1, 3), (0, 2, 3), (0, 1, 2, 3)]
        for vals in itertools.product(range(3), repeat=len(S))
        if all(x != w[p] for p, x in zip(S, vals))
    ]
    s = score_variants(exact, torch.tensor(w), variants, methods=["hcb", "masked_marginals"])
    m = torch.tensor(w).repeat(len(variants), 1)
    for k, v in enumerate(variants):
        for p, t in v:
            m[k, p] = t
    want = exact.log_prob(m) - exact.log_prob(torch.tensor([w]))
    assert torch.allclose(s["hcb"], want, atol=1e-5)
    multi = [k for k, v in enumerate(variants) if len(v) > 1]
    assert (s["masked_marginals"][multi] - want[multi]).abs().max() > 0.05  # the additive score is not exact


def distinct_rows(w, variants, methods, mask):
    """The set of row contents the methods' formulas read (pll_delta and ag excluded)."""
    rows = set()
    for v in variants:
        S = sorted(p for p, _ in v)
        mut = dict(v)
        m = list(w)
        for p, t in v:
            m[p] = t
        for j, i in enumerate(S):
            ctx = {"wt_marginals": list(w), "mutant_marginals": list(m)}
            ctx["masked_marginals"] = [mask if p == i else x for p, x in enumerate(w)]
            ctx["masked_marginals_all"] = [mask if p in S else x for p, x in enumerate(w)]
            ctx["masked_marginals_mt"] = [mask if p == i else x for p, x in enumerate(m)]
            c = [mut[p] if p in S[:j] else x for p, x in enumerate(w)]
            ctx["hcb"] = [mask if p == i else x for p, x in enumerate(c)]
            rows |= {tuple(ctx[k]) for k in methods}
    return rows


def test_forward_rows_are_shared_by_content(lookup):
    variants = some_variants()
    row_methods = [
        "wt_marginals",
        "masked_marginals",
        "masked_marginals_all",
        "masked_marginals_mt",
        "mutant_marginals",
        "hcb",
    ]
    terms = sum(2 * len(v) for v in variants) * len(row_methods)
    want = distinct_rows(W, variants, row_methods, lookup.mask_id)
    score_variants(lookup, torch.tensor(W), variants, methods=row_methods)
    assert lookup.calls == len(want) < terms // 2
    # one masked row per mutated position serves every variant's masked_marginals
    lookup.calls = 0
    score_variants(lookup, torch.tensor(W), variants, methods=["masked_marginals"])
    assert lookup.calls == len({p for v in variants for p, _ in v}) == 5
    # hcb contexts that coincide are computed once: A1C:D3E and A1C:D3F share c_1 and c_2
    lookup.calls = 0
    score_variants(lookup, torch.tensor(W), [[(1, 3), (3, 0)], [(1, 3), (3, 2)]], methods=["hcb"])
    assert lookup.calls == 2
    # pll_delta: PLL(w) from the masked rows, every mutant re-scored in full
    lookup.calls = 0
    score_variants(lookup, torch.tensor(W), variants, methods=["pll_delta", "masked_marginals"])
    assert lookup.calls == T + len(variants) * T


def test_cache_keeps_the_wild_type_rows_across_chunks(lookup):
    variants = some_variants()
    full = score_variants(lookup, torch.tensor(W), variants, methods=METHODS)
    cache = ForwardCache()
    lookup.calls = 0
    a = score_variants(lookup, torch.tensor(W), variants[:4], methods=["wt_marginals", "masked_marginals"], cache=cache)
    first = lookup.calls
    b = score_variants(lookup, torch.tensor(W), variants[4:], methods=["wt_marginals", "masked_marginals"], cache=cache)
    assert first == 1 + 3 and lookup.calls - first == 2  # positions {1, 3, 4}, then only {0, 2} are new
    for m in ("wt_marginals", "masked_marginals"):
        assert torch.equal(torch.cat([a[m], b[m]]), full[m])
    with pytest.raises(MLMProbError, match="another model or wild type"):
        score_variants(lookup, torch.tensor([0, 0, 0, 0, 0]), variants[:1], methods=["wt_marginals"], cache=cache)


def test_batch_size_does_not_change_scores(tiny_bert, one_thread):
    ids = tiny_bert.encode(["ACDEFGHIKLACD"]).input_ids[0]
    variants = [[(2, 4)], [(2, 5), (7, 9)], [(1, 8), (3, 4), (13, 6)], [(5, 7), (6, 8)]]
    a = score_variants(tiny_bert, ids, variants, methods=["masked_marginals", "hcb", "pll_delta", "ag"])
    b = score_variants(reader_of(tiny_bert, 30), ids, variants, methods=["masked_marginals", "hcb", "pll_delta", "ag"])
    for m in a:
        assert torch.allclose(a[m], b[m], atol=1e-4, equal_nan=True), m
    m = ids.repeat(len(variants), 1)
    for k, v in enumerate(variants):
        for p, t in v:
            m[k, p] = t
    want = mlmprob.pll(tiny_bert, m) - mlmprob.pll(tiny_bert, ids[None])
    assert torch.allclose(a["pll_delta"], want, atol=1e-4)
    assert torch.isnan(a["ag"][[0, 2]]).all() and torch.isfinite(a["ag"][[1, 3]]).all()


class WithSpecial(LookupMLM):
    special_ids = frozenset({0})


@pytest.mark.parametrize(
    "variant, message",
    [
        ([], "variant 0 has no mutation"),
        ([(5, 1)], "position 5 is outside"),
        ([(-1, 1)], "position -1 is outside"),
        ([(3, 2), (3, 0)], "position 3 is mutated twice"),
        ([(3, 4)], "token 4 at position 3"),  # the mask id
        ([(2, 0)], "token 0 at position 2"),  # a special token
        ([(1, 1)], "position 1 holds a special token"),
        ([(1, "x")], "list of \\(position, token_id\\) pairs"),
        ([1, 2], "list of \\(position, token_id\\) pairs"),
    ],
)
def test_bad_variants_name_the_problem(variant, message):
    m = WithSpecial(vocab_size=V, length=T)
    with pytest.raises(MLMProbError, match=message):
        score_variants(m, torch.tensor([2, 0, 3, 1, 2]), [variant])


def test_bad_arguments(lookup):
    with pytest.raises(MLMProbError, match="unknown variant scoring method 'bogus'"):
        score_variants(lookup, torch.tensor(W), [[(1, 2)]], methods=["hcb", "bogus"])
    with pytest.raises(MLMProbError, match="mask token at position 2"):
        score_variants(lookup, torch.tensor([2, 0, 4, 1, 2]), [[(1, 2)]])
    with pytest.raises(MLMProbError, match="shape"):
        score_variants(lookup, torch.tensor([W, W]), [[(1, 2)]])
    with pytest.raises(MLMProbError, match="batch_tokens"):
        score_variants(reader_of(lookup, 0), torch.tensor(W), [[(1, 2)]])
    assert score_variants(lookup, torch.tensor(W), [], methods="hcb")["hcb"].shape == (0,)


class Restricted(LookupMLM):
    proposal_ids = torch.tensor([0, 1, 2])


def test_ag_is_nan_outside_the_candidates():
    m = Restricted(vocab_size=V, length=T, seed=3)
    s = score_variants(m, torch.tensor(W), [[(1, 2), (3, 0)], [(1, 3), (3, 0)], [(0, 1), (2, 0)]], methods=["ag"])
    lj = mlmprob.pairwise_joint(m, torch.tensor(W), 1, 3, method="ag")  # over tokens 0, 1, 2
    assert abs(float(s["ag"][0]) - float(lj[2, 0] - lj[W[1], W[3]])) < 1e-12
    assert torch.isnan(s["ag"][1])  # mutant token 3 is not a candidate
    assert torch.isnan(s["ag"][2])  # wild-type token 3 at position 2 is not a candidate
