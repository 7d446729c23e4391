"""Ancestral (chain-rule) sampling: exact draws of p_sigma and of the mixture over orders, checked
against the enumerated distributions of ``mlmprob.loglik`` with a tolerance from the sample size."""

import itertools
import math

import pytest
import torch

from mlmprob import LookupMLM, loglik
from mlmprob.errors import MLMProbError
from mlmprob.models.exact import all_sequences
from mlmprob.sampling import sample

from sampling_fixtures import exact, gen  # noqa: E402  (tests/ is on sys.path)

pytestmark = pytest.mark.usefixtures("one_thread")

V, T = 3, 3
SEQS = all_sequences(V, T)


def tv_bound(p: torch.Tensor, n: int, delta: float = 1e-6) -> float:
    """E[TV(empirical, p)] <= 0.5 sum sqrt(p (1 - p) / n), plus McDiarmid's deviation at level delta."""
    return 0.5 * float((p * (1 - p) / n).sqrt().sum()) + math.sqrt(math.log(1 / delta) / (2 * n))


def empirical(ids: torch.Tensor, positions=range(T)) -> torch.Tensor:
    """Frequencies over SEQS (lexicographic index) of draws ``[N, T]``."""
    code = (ids[:, list(positions)] * (V ** torch.arange(len(positions) - 1, -1, -1))).sum(-1)
    return torch.bincount(code, minlength=V ** len(positions)).double() / len(ids)


def draws(m, order, n=6000, epochs=2, **kw):
    r = sample(m, torch.zeros(n, T, dtype=torch.long), method="ancestral", order=order, epochs=epochs,
               generator=gen(5), **kw)
    return r, r.samples.reshape(-1, T), r.log_prob.reshape(-1)


@pytest.mark.parametrize("order", ["l2r", "r2l", [[2, 0, 1]]])
def test_draws_follow_p_sigma_and_carry_its_log_probability(order):
    m = LookupMLM(V, T, seed=7)
    r, x, lp = draws(m, order)
    want = loglik(m, SEQS, order=order).per_order[:, 0].exp()
    assert torch.allclose(want.sum(), torch.tensor(1.0, dtype=torch.float64))
    tv = 0.5 * float((empirical(x) - want).abs().sum())
    assert tv < tv_bound(want, len(x)), tv
    # the returned log-probability is log p_sigma of the draw, exactly
    assert torch.allclose(lp, loglik(m, x, order=order).per_order[:, 0], atol=1e-9)
    assert r.samples.shape == (2, 6000, T) and r.forward_rows == 2 * 6000 * T  # one row per step


def test_random_orders_draw_the_mixture_not_one_order():
    m = LookupMLM(V, T, seed=7)
    _, x, lp = draws(m, "random", n=8000)
    r = loglik(m, SEQS, order="random", n_orders=6)
    mix = r.mixture.exp()
    tv = 0.5 * float((empirical(x) - mix).abs().sum())
    assert tv < tv_bound(mix, len(x)), tv
    l2r = r.per_order[:, 0].exp()
    far = 0.5 * float((empirical(x) - l2r).abs().sum())
    assert 0.5 * float((mix - l2r).abs().sum()) > 3 * tv_bound(mix, len(x)) and far > tv_bound(l2r, len(x))
    # each draw's log-probability is that of the order it was drawn in: one of the six
    per = loglik(m, x[:200], order=[list(o) for o in itertools.permutations(range(T))]).per_order
    assert ((per - lp[:200, None]).abs().min(1).values < 1e-9).all()


def test_parallel_decoding_draws_each_position_from_its_own_conditional():
    m = LookupMLM(V, T, seed=7)
    _, x, lp = draws(m, "l2r", tokens_per_step=T)
    all_masked = m.logits(torch.full((1, T), m.mask_id))[0].double().log_softmax(-1)        # [T, V]
    prod = sum(all_masked[t][SEQS[:, t]] for t in range(T)).exp()
    tv = 0.5 * float((empirical(x) - prod).abs().sum())
    assert tv < tv_bound(prod, len(x)), tv
    assert torch.allclose(lp, sum(all_masked[t][x[:, t]] for t in range(T)))
    _, x2, _ = draws(m, "l2r", tokens_per_step=2, n=200, epochs=1)
    assert x2.shape == (200, T)


def test_context_positions_give_the_conditional_distribution():
    m = LookupMLM(V, T, seed=8)
    start = torch.tensor([[2, 0, 0]]).expand(6000, T).clone()
    r = sample(m, start, method="ancestral", order="r2l", positions=[1, 2], epochs=2, generator=gen(1))
    x = r.samples.reshape(-1, T)
    assert (x[:, 0] == 2).all()
    want = loglik(m, SEQS[SEQS[:, 0] == 2], positions=[1, 2], order="r2l").per_order[:, 0].exp()
    tv = 0.5 * float((empirical(x, [1, 2]) - want).abs().sum())
    assert tv < tv_bound(want, len(x)), tv


def test_compatible_conditionals_give_the_joint_in_every_order():
    m = exact(V, T, seed=3)
    _, x, lp = draws(m, "random", n=200, epochs=1)
    assert torch.allclose(lp, m.log_prob(x), atol=1e-5)


def test_resume_and_bad_input(tmp_path):
    m = LookupMLM(V, T, seed=7)
    ids = torch.zeros(4, T, dtype=torch.long)
    kw = dict(method="ancestral", order="random", generator=gen(3))
    full = sample(m, ids, epochs=4, **kw)
    path = tmp_path / "a.jsonl"
    sample(m, ids, epochs=2, jsonl=path, **{**kw, "generator": gen(3)})
    resumed = sample(m, ids, epochs=4, jsonl=path, **{**kw, "generator": gen(99)})
    assert torch.equal(full.samples, resumed.samples) and torch.equal(full.log_prob, resumed.log_prob)
    with pytest.raises(MLMProbError, match="tokens_per_step must be a positive integer"):
        sample(m, ids, method="ancestral", tokens_per_step=0, epochs=1)
    with pytest.raises(MLMProbError, match="tokens_per_step is for method='ancestral'"):
        sample(m, ids, method="gibbs", tokens_per_step=2, epochs=1)
    with pytest.raises(MLMProbError, match="order must be one of"):
        sample(m, ids, method="ancestral", order="sideways", epochs=1)
    with pytest.raises(MLMProbError, match="not a permutation"):
        sample(m, ids, method="ancestral", order=[0, 1], epochs=1)
    assert sample(m, ids, method="mh", epochs=1, generator=gen(0)).log_prob is None
