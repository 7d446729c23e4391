"""The parallel decoders (``sampling.unmasking``, ``sampling.adaptive``) against their exact output law
(``sampling.decoder_exact``) and against the truth:

- the kernels' draws (20000 chains, fixed seed) follow the enumerated law within a TV bound from the sample
  size, on incompatible ``LookupMLM`` conditionals, for every score, schedule, blocks, remasking and the
  adaptive decoder; the bound is tight enough to fail: the confidence decoder's draws against the margin
  decoder's law (same model, same steps) fail it;
- the enumerator on closed forms: one step is the product of the all-masked conditionals; remasking every
  position redraws from that product;
- one position per step with a score of the state (margin, entropy; the adaptive decoder at threshold 0) is
  the joint on ``ExactMLM`` and ``p_{sigma(x)}(x)`` (the chain rule along the order ``x`` itself produces) on
  ``LookupMLM``, which is neither a fixed order's ``p_sigma`` nor the mixture; with the confidence score it is
  not the joint even for compatible conditionals;
- ``log_prob`` is the product of the conditionals used, replayed from ``revealed_at``; costs are counted.
"""

import itertools
import math

import pytest
import torch
from sampling_fixtures import gen  # noqa: E402  (tests/ is on sys.path)

from mlmprob import ExactMLM, LookupMLM, loglik
from mlmprob.errors import MLMProbError
from mlmprob.models.exact import all_sequences
from mlmprob.sampling import ProposalConfig, proposal_log_probs
from mlmprob.sampling.adaptive import Adaptive
from mlmprob.sampling.decoder_exact import exact_output_distribution, model_logprobs
from mlmprob.sampling.decoders import reveal_counts, scores, select_top, unmask_plan
from mlmprob.sampling.unmasking import Unmasking

pytestmark = pytest.mark.usefixtures("one_thread")

V, T = 3, 4
SEQS = all_sequences(V, T)
N = 20000


def tv_bound(p: torch.Tensor, n: int, delta: float = 1e-6) -> float:
    """E[TV(empirical, p)] <= 0.5 sum sqrt(p (1 - p) / n), plus McDiarmid's deviation at level delta."""
    return 0.5 * float((p * (1 - p) / n).sqrt().sum()) + math.sqrt(math.log(1 / delta) / (2 * n))


def code(ids):
    return (ids * (V ** torch.arange(T - 1, -1, -1))).sum(-1)


def empirical(ids):
    return torch.bincount(code(ids), minlength=V**T).double() / len(ids)


def tv(p, q):
    return 0.5 * float((p - q).abs().sum())


def draw(kernel, n=N, seed=5, ids=None, free=None):
    s = kernel.init(torch.zeros(n, T, dtype=torch.long) if ids is None else ids, free)
    g = gen(seed)
    while s.epoch == 0:
        s, _ = kernel.step(s, g)
    return s


def law(kernel, m):
    return exact_output_distribution(kernel, model_logprobs(m), V, T)


def product_of_marginals(m):
    lq = model_logprobs(m)(torch.full((1, T), V))[0]  # [T, V]: all masked
    return sum(lq[t][SEQS[:, t]] for t in range(T)).exp()


def replay_log_prob(m, s, proposal=ProposalConfig()):
    """Sum over positions of log q(x_i | the state when i was revealed): revealed_at gives the states."""
    base = model_logprobs(m)

    def lp(states):
        b = base(states)
        return proposal_log_probs(b.reshape(-1, V), None, proposal).view(b.shape)

    out = torch.zeros(len(s.ids), dtype=torch.float64)
    for step in range(int(s.revealed_at.max()) + 1):
        state = torch.where(s.revealed_at < step, s.ids, V)
        now = s.revealed_at == step
        rows = now.any(1).nonzero(as_tuple=True)[0]
        q = lp(state[rows])  # [r, T, V]
        out[rows] += torch.where(now[rows], q.gather(2, s.ids[rows, :, None])[..., 0], 0.0).sum(1)
    return out


# -- the pure rules ------------------------------------------------------------------------------------------
def test_schedules_reveal_every_position_at_least_one_per_step():
    for n, S, sch in itertools.product(range(0, 13), range(1, 15), ("linear", "cosine")):
        c = reveal_counts(n, S, sch)
        assert sum(c) == n and len(c) == min(n, S) and all(x >= 1 for x in c), (n, S, sch, c)
    assert reveal_counts(12, 4, "cosine")[0] < reveal_counts(12, 4, "cosine")[-1]  # few first, many last
    free = torch.tensor([[1, 1, 1, 1, 1, 0, 1], [0, 1, 0, 1, 1, 1, 1], [0] * 7]).bool()
    w, c = unmask_plan(free, steps=4, block_length=3)
    assert torch.equal(c.sum(0), free.sum(1))
    for b in range(3):  # blocks left to right, each free position in the window of the steps that reveal it
        first = [int(w[s, b].nonzero()[0]) if w[s, b].any() else None for s in range(w.shape[0]) if c[s, b] > 0]
        assert first == sorted(first)
    with pytest.raises(MLMProbError, match="schedule"):
        reveal_counts(3, 2, "exp")


def test_scores_and_ties():
    lq = torch.tensor([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.9, 0.05, 0.05]], dtype=torch.float64).log()
    assert scores(lq, torch.tensor([0, 2, 1]), "margin")[:2].tolist() == pytest.approx([0.2, 0.2])
    got = select_top(
        scores(lq, torch.tensor([0, 2, 1]), "margin")[None], torch.ones(1, 3, dtype=torch.bool), torch.tensor([2])
    )
    assert got.int().tolist() == [[1, 0, 1]]  # equal margins at 0 and 1: the lowest position
    conf = scores(lq, torch.tensor([0, 2, 1]), "confidence")[None]
    assert select_top(conf, torch.ones(1, 3, dtype=torch.bool), torch.tensor([1])).int().tolist() == [[1, 0, 0]]


# -- kernels against the enumerated law ----------------------------------------------------------------------
DECODERS = {
    "confidence-linear": dict(cls=Unmasking, score="confidence", steps=2),
    "margin-cosine": dict(cls=Unmasking, score="margin", steps=3, schedule="cosine"),
    "entropy-blocks": dict(cls=Unmasking, score="entropy", steps=3, block_length=2),
    "confidence-blocks": dict(cls=Unmasking, score="confidence", steps=2, block_length=3),
    "confidence-remask": dict(cls=Unmasking, score="confidence", steps=2, remask=0.3, remask_steps=2),
    "adaptive-margin": dict(cls=Adaptive, threshold=1.2, score="margin"),
    "adaptive-confidence-topk": dict(cls=Adaptive, threshold=0.8, score="confidence", pair_top_k=2),
    "entropy-nucleus": dict(cls=Unmasking, score="entropy", steps=2, proposal=ProposalConfig(0.7, 0.8)),
    "adaptive-nucleus": dict(cls=Adaptive, threshold=2.0, score="entropy", proposal=ProposalConfig(0.7, 0.95)),
}


def make(m, name, **over):
    kw = {**DECODERS[name], **over}
    return kw.pop("cls")(m, **kw)


@pytest.mark.parametrize("name", list(DECODERS))
def test_draws_follow_the_enumerated_law(name):
    m = LookupMLM(V, T, seed=7)
    k = make(m, name)
    exact = law(k, m)
    assert abs(float(exact.probs.sum()) - 1) < 1e-9
    s = draw(k)
    assert tv(empirical(s.ids), exact.probs) < tv_bound(exact.probs, N)
    calls = s.calls.double()
    assert abs(float(calls.mean()) - exact.calls) < 6 * float(calls.std()) / math.sqrt(N) + 1e-9
    if "remask" not in name:
        assert torch.allclose(s.log_prob, replay_log_prob(m, s, k.proposal), atol=1e-9)
    assert (s.revealed_at[s.free] >= 0).all()
    if k.__class__ is Adaptive:  # some steps reveal several positions, some one: the rule is exercised
        assert 1 < exact.steps < T and s.rounds.min() < s.rounds.max()
        assert abs(float(s.rounds.double().mean()) - exact.steps) < 6 * float(s.rounds.double().std()) / math.sqrt(N)
        assert s.forward_rows / N == pytest.approx(exact.rows, rel=0.01)


def test_the_bound_can_fail_confidence_is_not_margin():
    m = LookupMLM(V, T, seed=7)
    other = law(Unmasking(m, score="margin", steps=2), m).probs
    s = draw(Unmasking(m, score="confidence", steps=2))
    assert tv(empirical(s.ids), other) > 2 * tv_bound(other, N)


# -- closed forms ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("score", ["confidence", "margin", "entropy"])
def test_one_step_and_full_remasking_are_the_one_pass_product(score):
    m = LookupMLM(V, T, seed=3)
    want = product_of_marginals(m)
    assert torch.allclose(law(Unmasking(m, score=score, steps=1), m).probs, want, atol=1e-12)
    full = Unmasking(m, score=score, steps=4, remask=1.0, remask_steps=1)
    assert torch.allclose(law(full, m).probs, want, atol=1e-12)
    assert torch.allclose(law(Adaptive(m, threshold=float("inf"), score=score), m).probs, want, atol=1e-12)
    assert tv(law(Unmasking(m, score=score, steps=4), m).probs, want) > 0.01


def realised_order(m, x, score):
    """The order in which one-position-per-step decoding with a state score reveals ``x``."""
    lp, state, order = model_logprobs(m), torch.full((T,), V), []
    for _ in range(T):
        lq = lp(state[None])[0]
        masked = state == V
        sc = torch.zeros(1, T, dtype=torch.float64)
        sc[0, masked] = scores(lq[masked], torch.zeros(int(masked.sum()), dtype=torch.long), score)
        p = int(select_top(sc, masked[None], torch.tensor([1]))[0].nonzero()[0])
        order.append(p)
        state[p] = x[p]
    return order


@pytest.mark.parametrize("score", ["margin", "entropy"])
def test_one_position_per_step_by_a_state_score(score):
    joint_model = ExactMLM.random(V, T, gen(3), scale=1.5)
    joint = joint_model.log_joint.flatten().exp()
    for k in (Unmasking(joint_model, score=score, steps=T), Adaptive(joint_model, threshold=0.0, score=score)):
        assert torch.allclose(law(k, joint_model).probs, joint, atol=1e-9)  # compatible: the joint
    m = LookupMLM(V, T, seed=7)
    got = law(Unmasking(m, score=score, steps=T), m).probs
    assert torch.allclose(law(Adaptive(m, threshold=0.0, score=score), m).probs, got, atol=1e-12)
    orders = [realised_order(m, x, score) for x in SEQS]
    want = torch.stack([loglik(m, x[None], order=[o]).per_order[0, 0] for x, o in zip(SEQS, orders)]).exp()
    assert torch.allclose(got, want, atol=1e-9)  # p_{sigma(x)}(x)
    fixed = loglik(m, SEQS, order=[list(o) for o in itertools.permutations(range(T))])
    assert min(tv(got, fixed.per_order[:, k].exp()) for k in range(24)) > 0.01  # no fixed order's
    assert tv(got, fixed.mixture.exp()) > 0.01  # nor the mixture
    s = draw(Adaptive(m, threshold=0.0, score=score), n=2000)
    assert (s.rounds == T).all()
    order = s.revealed_at.argsort(1)
    per = torch.stack([loglik(m, x[None], order=[o.tolist()]).per_order[0, 0] for x, o in zip(s.ids[:200], order)])
    assert torch.allclose(s.log_prob[:200], per, atol=1e-9)


def test_confidence_one_position_per_step_is_not_the_joint():
    m = ExactMLM.random(V, T, gen(3), scale=1.5)
    joint = m.log_joint.flatten().exp()
    exact = law(Unmasking(m, score="confidence", steps=T), m).probs
    assert tv(exact, joint) > 0.02
    s = draw(Unmasking(m, score="confidence", steps=T))
    assert tv(empirical(s.ids), exact) < tv_bound(exact, N) < tv(empirical(s.ids), joint) / 2
    # the draws are biased to the mode: the most probable sequence is over-represented
    top = int(joint.argmax())
    assert exact[top] > joint[top]


# -- costs, context, errors --------------------------------------------------------------------------------------
def test_costs_and_chains_with_context():
    m = LookupMLM(3, 5, seed=3)
    free = torch.tensor([[1, 1, 1, 1, 1], [0, 1, 0, 1, 0], [0, 0, 0, 0, 0], [1, 0, 0, 0, 0]]).bool()
    ids = torch.tensor([[0, 0, 0, 0, 0], [2, 0, 1, 0, 2], [1, 1, 1, 1, 1], [0, 2, 2, 2, 2]])
    for k in (
        Unmasking(m, steps=3, block_length=2, remask=0.5, remask_steps=2),
        Adaptive(m, threshold=0.2),
        Adaptive(m, threshold=0.2, pair_top_k=1),
    ):
        before = m.calls
        s = k.init(ids, free)
        g = gen(0)
        while s.epoch == 0:
            s, _ = k.step(s, g)
        assert ((s.ids == ids) | free).all() and (s.ids < m.mask_id).all()
        assert s.forward_rows == m.calls - before  # every row the model served is counted
        assert s.calls[2] == 0 and s.log_prob[2] == 0 and torch.isfinite(s.log_prob).all()
    u = Unmasking(m, steps=3, block_length=2)
    s = draw(u, n=4, ids=ids, free=free)
    assert s.calls.tolist() == [3, 2, 0, 1] and s.forward_rows == 6


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(score="loud"), "score must be one of"),
        (dict(steps=0), "steps must be a positive integer"),
        (dict(schedule="exp"), "schedule"),
        (dict(remask=1.5), "remask must be a probability"),
        (dict(remask_steps=-1), "remask_steps"),
        (dict(block_length=0), "block_length"),
    ],
)
def test_bad_settings(kw, match):
    with pytest.raises(MLMProbError, match=match):
        Unmasking(LookupMLM(V, T), **kw)


def test_bad_adaptive_settings():
    with pytest.raises(MLMProbError, match="threshold"):
        Adaptive(LookupMLM(V, T), threshold=-1)
    with pytest.raises(MLMProbError, match="pair_top_k"):
        Adaptive(LookupMLM(V, T), pair_top_k=0)


def test_dependence_is_the_pair_mutual_information_for_a_joint():
    m = ExactMLM.random(V, T, gen(4), scale=1.5)
    k = Adaptive(m)
    ids = torch.tensor([[V, 1, V, V]])  # x_1 = 1 revealed, the others masked
    masked = ids == V
    rows, cols = masked.nonzero(as_tuple=True)
    _, _, D, n_rows, calls = k._read(ids, masked, rows, cols)
    p = m.log_joint.exp()[:, 1]  # [V, V, V] over positions 0, 2, 3 given x_1 = 1
    p = p / p.sum()
    pos = [0, 2, 3]
    for a, b in itertools.combinations(range(3), 2):
        pab = p.sum(dim=[d for d in range(3) if d not in (a, b)])
        mi = float((pab * (pab.log() - pab.sum(1, keepdim=True).log() - pab.sum(0, keepdim=True).log())).sum())
        assert D[0, pos[a], pos[b]] == pytest.approx(mi, abs=1e-6) and D[0, pos[b], pos[a]] == pytest.approx(
            mi, abs=1e-6
        )
    assert n_rows == 1 + 3 * V and calls.tolist() == [1]
    assert D[0, 1].abs().sum() == 0 and D[0, :, 1].abs().sum() == 0  # the revealed position takes no part


class Wrapped:
    """``ExactMLM`` behind ``[CLS] x [SEP]`` with the symbols at ids ``5..5+V-1`` (as the trained synthetic models):
    the enumerator's ``wrap`` / ``offset`` path."""

    special_ids = (0, 1, 2, 3)

    def __init__(self, inner):
        self.inner, self.vocab_size, self.mask_id = inner, 5 + inner.vocab_size, 4
        self.proposal_ids = list(range(5, self.vocab_size))

    def logits(self, ids):
        x = ids[:, 1:-1]
        x = torch.where(x == self.mask_id, self.inner.mask_id, x - 5)
        out = torch.full((ids.shape[0], ids.shape[1], self.vocab_size), -30.0)
        out[:, 1:-1, 5:] = self.inner.logits(x)
        return out


def test_enumerator_with_wrapped_symbols_as_the_ground_truth_models():
    from mlmprob.training.data import SYMBOL_OFFSET, wrap_symbols

    assert SYMBOL_OFFSET == 5
    inner = LookupMLM(V, T, seed=7)
    k = Unmasking(inner, score="confidence", steps=2)
    want = law(k, inner).probs
    got = exact_output_distribution(k, model_logprobs(Wrapped(inner), wrap=wrap_symbols, offset=SYMBOL_OFFSET), V, T)
    assert torch.allclose(got.probs, want, atol=1e-9)
    wrapped = Wrapped(inner)
    s = draw(Unmasking(wrapped, score="confidence", steps=2), ids=wrap_symbols(torch.zeros(N, T, dtype=torch.long)))
    assert tv(empirical(s.ids[:, 1:-1] - 5), want) < tv_bound(want, N)


@pytest.mark.parametrize("cls", [Unmasking, Adaptive])
def test_greedy_proposals_are_scored_at_temperature_one(cls):
    """At proposal temperature 0 every proposal row is one-hot; the scores read the temperature-1 rows (Dream's
    rule), so the order is the model's, not left to right, and the enumerated law is the kernel's one output."""
    m = LookupMLM(V, T, seed=7)
    k = cls(
        m,
        score="margin",
        proposal=ProposalConfig(temperature=0.0),
        **({"steps": T} if cls is Unmasking else {"threshold": 0.0}),
    )
    s = draw(k, n=3)
    assert (s.ids == s.ids[0]).all()
    exact = law(k, m).probs
    assert exact[code(s.ids[:1])].item() == pytest.approx(1.0)
    order = s.revealed_at[0].argsort().tolist()
    assert order == realised_order(m, s.ids[0], "margin") and order != list(range(T))
