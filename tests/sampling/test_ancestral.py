"""Ancestral (chain-rule) sampling: exact draws of p_sigma and of the mixture over orders, checked
against the enumerated distributions of ``mlmprob.loglik`` with a tolerance from the sample size."""

import itertools
import math

import pytest
import torch
from sampling_fixtures import exact, gen  # noqa: E402  (tests/ is on sys.path)

from mlmprob import LookupMLM, loglik
from mlmprob.errors import MLMProbError
from mlmprob.models.exact import all_sequences
from mlmprob.sampling import Ancestral, sample
from mlmprob.sampling.io import RunFile

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


def draws(m, order, n=12000, tokens_per_step=1, positions=None, start=None):
    """One epoch of the kernel on ``n`` chains (the driver adds energies per epoch, not needed here)."""
    k = Ancestral(m, order=order, tokens_per_step=tokens_per_step)
    ids = torch.zeros(n, T, dtype=torch.long) if start is None else start
    s = k.init(
        ids,
        None
        if positions is None
        else torch.zeros(n, T, dtype=torch.bool).index_fill_(1, torch.tensor(positions), True),
    )
    g = gen(5)
    while True:
        s, info = k.step(s, g)
        if info.end_of_epoch:
            return s, s.ids, s.log_prob


@pytest.mark.parametrize("order", ["l2r", "r2l", [[2, 0, 1]]])
def test_draws_follow_p_sigma_and_carry_its_log_probability(order):
    m = LookupMLM(V, T, seed=7)
    s, x, lp = draws(m, order)
    want = loglik(m, SEQS, order=order).per_order[:, 0]
    assert torch.allclose(want.exp().sum(), torch.tensor(1.0, dtype=torch.float64))
    tv = 0.5 * float((empirical(x) - want.exp()).abs().sum())
    assert tv < tv_bound(want.exp(), len(x)), tv
    # the returned log-probability is log p_sigma of the draw, exactly
    assert torch.allclose(lp, want[(x * torch.tensor([9, 3, 1])).sum(-1)], atol=1e-9)
    assert s.epoch == 1 and s.forward_rows == 12000 * T  # one row per chain and step


def test_random_orders_draw_the_mixture_not_one_order():
    m = LookupMLM(V, T, seed=7)
    _, x, lp = draws(m, "random", n=12000)
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
    s, x, lp = draws(m, "l2r", tokens_per_step=T)
    assert s.forward_rows == 12000  # one row per chain, read at all T positions
    all_masked = m.logits(torch.full((1, T), m.mask_id))[0].double().log_softmax(-1)  # [T, V]
    prod = sum(all_masked[t][SEQS[:, t]] for t in range(T)).exp()
    tv = 0.5 * float((empirical(x) - prod).abs().sum())
    assert tv < tv_bound(prod, len(x)), tv
    assert torch.allclose(lp, sum(all_masked[t][x[:, t]] for t in range(T)))
    s2, x2, _ = draws(m, "l2r", tokens_per_step=2, n=200)
    assert x2.shape == (200, T) and s2.forward_rows == 2 * 200


def test_context_positions_give_the_conditional_distribution():
    m = LookupMLM(V, T, seed=8)
    start = torch.tensor([[2, 0, 0]]).expand(12000, T).clone()
    _, x, _ = draws(m, "r2l", positions=[1, 2], start=start)
    assert (x[:, 0] == 2).all()
    want = loglik(m, SEQS[SEQS[:, 0] == 2], positions=[1, 2], order="r2l").per_order[:, 0].exp()
    tv = 0.5 * float((empirical(x, [1, 2]) - want).abs().sum())
    assert tv < tv_bound(want, len(x)), tv


def test_compatible_conditionals_give_the_joint_in_every_order():
    m = exact(V, T, seed=3)
    _, x, lp = draws(m, "random", n=200)
    assert torch.allclose(lp, m.log_prob(x), atol=1e-5)
    r = sample(m, torch.zeros(50, T, dtype=torch.long), method="ancestral", order="l2r", epochs=2, generator=gen(1))
    assert r.samples.shape == (2, 50, T) and torch.allclose(
        r.log_prob, m.log_prob(r.samples.reshape(-1, T)).view(2, 50), atol=1e-5
    )
    assert r.forward_rows == 2 * 50 * T and torch.isnan(r.target_temperature).all()


def test_resume_and_bad_input(tmp_path):
    m = LookupMLM(V, T, seed=7)
    ids = torch.zeros(4, T, dtype=torch.long)
    kw = dict(method="ancestral", order="random", generator=gen(3))
    full = sample(m, ids, epochs=4, **kw)
    path = tmp_path / "a.jsonl"
    sample(m, ids, epochs=2, run_file=RunFile(path), **{**kw, "generator": gen(3)})
    resumed = sample(m, ids, epochs=4, run_file=RunFile(path), **{**kw, "generator": gen(99)})
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
