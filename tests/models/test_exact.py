"""ExactMLM and LookupMLM against brute-force enumeration."""

import itertools

import pytest
import torch

from mlmprob import ExactMLM, MLMProbError
from mlmprob.models.exact import LookupMLM, all_sequences


def brute_conditional(p, x, t, masked):
    """p(x_t = v | observed) by summing the joint table over masked positions, from scratch."""
    V, T = p.shape[0], p.dim()
    out = torch.zeros(V, dtype=torch.float64)
    for full in itertools.product(range(V), repeat=T):
        if all(full[i] == x[i] for i in range(T) if i not in masked and i != t):
            out[full[t]] += p[full]
    return out / out.sum()


@pytest.mark.parametrize("V,T", [(2, 3), (3, 3), (4, 4)])
def test_exact_conditionals_match_enumeration(V, T):
    g = torch.Generator().manual_seed(V * 10 + T)
    m = ExactMLM.random(V, T, generator=g)
    p = m.log_joint.exp()
    assert torch.allclose(p.sum(), torch.tensor(1.0, dtype=torch.float64))
    for _ in range(12):
        x = torch.randint(0, V, (T,), generator=g)
        masked = {i for i in range(T) if torch.rand((), generator=g) < 0.4}
        ids = x.clone()
        ids[list(masked)] = m.mask_id
        got = m.logits(ids[None])[0].double().exp()
        for t in range(T):
            ref = brute_conditional(p, x.tolist(), t, masked)
            assert torch.allclose(got[t], ref, atol=1e-6), (x, masked, t)


def test_exact_batch_matches_rows_and_counts_calls():
    m = ExactMLM.random(3, 4, generator=torch.Generator().manual_seed(1))
    ids = torch.tensor([[0, 3, 1, 2], [3, 3, 0, 1], [2, 1, 0, 3], [0, 3, 1, 2]])
    full = m.logits(ids)
    for b in range(4):
        assert torch.equal(full[b], m.logits(ids[b : b + 1])[0])
    assert m.calls == 8


def test_exact_log_prob_and_errors():
    m = ExactMLM.random(3, 3, generator=torch.Generator().manual_seed(2))
    seqs = all_sequences(3, 3)
    assert torch.allclose(m.log_prob(seqs).exp().sum(), torch.tensor(1.0, dtype=torch.float64))
    with pytest.raises(MLMProbError, match="shape"):
        ExactMLM(torch.zeros(2, 3))
    with pytest.raises(MLMProbError, match=r"\[B, 3\]"):
        m.logits(torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(MLMProbError, match="0..3"):
        m.logits(torch.tensor([[0, 1, 7]]))


def test_lookup_is_deterministic_and_incompatible():
    a, b = LookupMLM(3, 3, seed=5), LookupMLM(3, 3, seed=5)
    ids = torch.tensor([[0, 3, 1], [3, 3, 2]])
    assert torch.equal(a.logits(ids), b.logits(ids))
    assert not torch.equal(a.logits(ids), LookupMLM(3, 3, seed=6).logits(ids))
    # incompatibility: the Besag ratio identity p(x)/p(y) computed along two different paths disagrees
    q = lambda ids, t: a.logits(torch.tensor([ids]))[0, t].log_softmax(-1)  # noqa: E731
    M = a.mask_id
    # path 1: (0,0,0) -> (1,0,0) -> (1,1,0); path 2: (0,0,0) -> (0,1,0) -> (1,1,0)
    r1 = (q([M, 0, 0], 0)[1] - q([M, 0, 0], 0)[0]) + (q([1, M, 0], 1)[1] - q([1, M, 0], 1)[0])
    r2 = (q([0, M, 0], 1)[1] - q([0, M, 0], 1)[0]) + (q([M, 1, 0], 0)[1] - q([M, 1, 0], 0)[0])
    assert abs(float(r1 - r2)) > 1e-3
    e = ExactMLM.random(3, 3, generator=torch.Generator().manual_seed(0))
    qe = lambda ids, t: e.logits(torch.tensor([ids]))[0, t].double().log_softmax(-1)  # noqa: E731
    r1 = (qe([M, 0, 0], 0)[1] - qe([M, 0, 0], 0)[0]) + (qe([1, M, 0], 1)[1] - qe([1, M, 0], 1)[0])
    r2 = (qe([0, M, 0], 1)[1] - qe([0, M, 0], 1)[0]) + (qe([M, 1, 0], 0)[1] - qe([M, 1, 0], 0)[0])
    assert abs(float(r1 - r2)) < 1e-5
