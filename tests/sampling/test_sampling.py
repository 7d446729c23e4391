"""Samplers against exact enumeration on tiny models (V 3-4, T 3-4).

Statistical tests run thousands of chains in one batch with fixed generators. Their tolerance is
a TV bound from the number of independent chains ``n``: ``E[TV] <= 1/2 sum_x sqrt(p(1-p)/n)``
plus a McDiarmid deviation ``sqrt(log(1/delta) / (2n))`` (changing one chain's trajectory moves
the pooled empirical distribution by at most ``1/n`` in TV). Each test also checks that a wrong
target lies outside the bound, so that it can fail. ``mh_reference`` (in this folder) is Algorithm 1
written from the paper without the package's sampling code: chains stepped literally, and the exact
sweep kernels over all states, whose laws the samplers' output is compared with.
"""

import functools
import math
from types import SimpleNamespace

import pytest
import torch
from mh_reference import block_kernel, epoch_kernel, literal_mh, sweep_blocks
from mh_reference import energies as ref_energies

from mlmprob import energy
from mlmprob.errors import MLMProbError
from mlmprob.models.exact import LookupMLM, all_sequences
from mlmprob.sampling import (
    LinearAnneal,
    LinearBlockSize,
    LiteralMH,
    MetropolisHastings,
    ProposalConfig,
    effective_sample_size,
    mask_predict,
    proposal_log_probs,
    reference_identity,
    sample,
    split_rhat,
    sweep_plan,
)
from mlmprob.sampling.forward import site_logits

DELTA = 1e-6


from sampling_fixtures import exact, gen  # noqa: E402  (tests/ is on sys.path)

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny tensors: threads only add contention


def target(mlm, kind="local", tau=1.0, positions=None, X=None):
    X = all_sequences(mlm.vocab_size, mlm.length) if X is None else X
    lp = -energy(mlm, X, positions, kind=kind) / tau
    return (lp - lp.logsumexp(0)).exp()


def index_of(mlm, ids):
    base = mlm.vocab_size ** torch.arange(mlm.length - 1, -1, -1)
    return (ids.reshape(-1, mlm.length) * base).sum(-1)


def empirical(mlm, samples):
    c = torch.bincount(index_of(mlm, samples), minlength=mlm.vocab_size**mlm.length).double()
    return c / c.sum()


def tv(p, q):
    return 0.5 * float((p - q).abs().sum())


def tv_bound(p, n):
    return 0.5 * float((p * (1 - p) / n).sqrt().sum()) + math.sqrt(math.log(1 / DELTA) / (2 * n))


def draw_from(mlm, p, n, seed):
    """``n`` exact draws from ``p`` over all sequences: chains that start in the stationary law."""
    return all_sequences(mlm.vocab_size, mlm.length)[torch.multinomial(p, n, replacement=True, generator=gen(seed))]


# ----------------------------------------------------------------------------------------- units


def test_proposal_temperature_nucleus_and_support():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert torch.allclose(
        proposal_log_probs(logits, config=ProposalConfig(2.0)).exp(), torch.softmax(logits.double() / 2, -1)
    )
    lp = proposal_log_probs(logits, config=ProposalConfig(top_p=0.9))
    assert torch.isinf(lp[0, 3]) and torch.allclose(lp[0, :3].exp().sum(), torch.tensor(1.0, dtype=torch.float64))
    lp = proposal_log_probs(logits, torch.tensor([False, True, True, True]), ProposalConfig(top_p=0.5))
    assert torch.isinf(lp[0, 0]) and lp[0, 1] == 0  # 0.3/0.5 = 0.6 >= 0.5: a single token
    with pytest.raises(MLMProbError, match="top_p"):
        ProposalConfig(top_p=0.0)
    with pytest.raises(MLMProbError, match="proposal_temperature"):
        ProposalConfig(temperature=-1)


def test_schedules():
    s = LinearAnneal(1.0, 0.06, 0.05)
    assert [round(s(e), 2) for e in (0, 1, 10, 100)] == [1.0, 0.94, 0.4, 0.05]
    with pytest.raises(MLMProbError, match="floor"):
        LinearAnneal(1.0, 0.1, 0.0)
    assert [LinearBlockSize(8, 1, 8)(e) for e in range(10)] == [8, 7, 6, 5, 4, 3, 2, 1, 1, 1]
    m = exact()
    r = sample(
        m,
        torch.zeros(3, 3, dtype=torch.long),
        epochs=3,
        burn_in=2,
        block_size=LinearBlockSize(3, 1, 3),
        target_temperature=LinearAnneal(1.0, 0.3, 0.2),
        generator=gen(0),
    )
    assert r.block_size.tolist() == [3, 2, 1, 1, 1]
    assert torch.allclose(r.target_temperature, torch.tensor([1.0, 0.7, 0.4, 0.2, 0.2], dtype=torch.float64))


def test_sweep_plan_covers_each_free_position_once_per_block_size():
    free = torch.tensor([[0, 1, 1, 1, 1, 0], [1, 1, 0, 0, 1, 0]], dtype=torch.bool)
    for k in (1, 2, 3, 10):
        for order in ("random", "l2r"):
            plan = sweep_plan(free, k, order, gen(k))
            assert torch.equal(plan.sum(0), free.long())
            assert (plan.sum(-1) <= k).all()
    l2r = sweep_plan(free, 1, "l2r", gen(0))
    assert l2r[:, 0].int().argmax(-1).tolist() == [1, 2, 3, 4]
    assert torch.equal(sweep_plan(free, 2, "random", gen(3)), sweep_plan(free, 2, "random", gen(3)))


def test_diagnostics_ess_rhat():
    """Stationary AR(1) chains, x_t = rho x_{t-1} + e_t, where tau = (1 + rho) / (1 - rho) is known.

    ESS: the relative error of an autocorrelation-time estimate summed over a window of M lags is
    about sqrt(2 (2M + 1) / (C N)) (Madras & Sokal 1988). Geyer's sequence stops where the pair sums
    (1 + rho) rho^(2k) drop into their noise, about 2 sqrt(tau / (C N)) (Bartlett): for rho = 0.8 and
    C N = 512000 draws at 2k ~ 26 lags, so M <= 50 is generous, giving a relative s.e. of 0.02;
    the test allows 3 s.e. (the truncation bias, rho^50 tau, is negligible).
    split-R-hat: with n = N/2 draws per half, R^2 = ((n-1)/n W + B/n) / W and B/n = the variance of
    the 2C half-means, about sigma^2 tau / n; so R - 1 ~ (tau - 1) / (2n), within 3 s.e. of the
    half-means' sample variance (relative s.e. sqrt(2 / (2C - 1))): below tau (1 + 3 sqrt(2/(2C-1))) / (2n).
    Chains offset by 5 c (c = 0..3): R^2 - 1 = var(offsets of the 8 halves) / sigma^2, sigma^2 = 1/(1-rho^2);
    W's relative s.e. is sqrt(2 tau_2 / (C N)), tau_2 = (1 + rho^2)/(1 - rho^2) for x^2: 3 s.e. ~ 7 %.
    """
    g = gen(0)
    rho, C, N = 0.8, 128, 4000
    tau = (1 + rho) / (1 - rho)
    sigma2 = 1 / (1 - rho**2)
    noise = torch.randn(C, N, generator=g, dtype=torch.float64)
    x = torch.empty(C, N, dtype=torch.float64)
    x[:, 0] = noise[:, 0] * math.sqrt(sigma2)  # start in the stationary law: no burn-in bias
    for t in range(1, N):
        x[:, t] = rho * x[:, t - 1] + noise[:, t]
    rel_se = math.sqrt(2 * (2 * 50 + 1) / (C * N))
    assert abs(effective_sample_size(x) / (C * N / tau) - 1) < 3 * rel_se
    n = N // 2
    assert 1 <= split_rhat(x) < 1 + tau * (1 + 3 * math.sqrt(2 / (2 * C - 1))) / (2 * n)
    offsets = 5 * torch.arange(4.0, dtype=torch.float64)
    expected = math.sqrt(1 + float(offsets.repeat_interleave(2).var()) / sigma2)
    w_se = math.sqrt(2 * (1 + rho**2) / (1 - rho**2) / (4 * N))
    assert abs(split_rhat(x[:4] + offsets[:, None]) ** 2 - expected**2) < 3 * w_se * (expected**2 - 1)
    assert math.isnan(effective_sample_size(torch.ones(2, 10)))
    assert (
        reference_identity(torch.tensor([[1, 2]]), torch.tensor([[1, 3]]), torch.tensor([[True, True]])).item() == 0.5
    )


# ------------------------------------------------------------------ the kernel is Algorithm 1


@pytest.mark.parametrize("model", ["exact", "lookup"])
@pytest.mark.parametrize(
    "kw", [{}, {"block_size": 2}, {"proposal": ProposalConfig(0.7, 0.9), "target_temperature": 0.8, "energy": "raw"}]
)
def test_fast_mh_equals_literal_algorithm_1(model, kw):
    """Same generator, same chains: the reuse kernel makes exactly the decisions of Algorithm 1 as
    written in ``mh_reference`` (from the paper, sharing no code with the kernels), and so does the
    package's own ``LiteralMH`` (the benchmark's baseline)."""
    m = exact(3, 4) if model == "exact" else LookupMLM(3, 4, seed=2)
    ids = torch.randint(3, (64, 4), generator=gen(0))
    fast, lit = MetropolisHastings(m, **kw), LiteralMH(m, **kw)
    pc = kw.get("proposal", ProposalConfig())
    ref = literal_mh(
        m,
        ids,
        24,
        gen(5),
        block_size=kw.get("block_size", 1),
        temperature=pc.temperature,
        top_p=pc.top_p,
        target_temperature=kw.get("target_temperature", 1.0),
        energy=kw.get("energy", "local"),
    )
    s1, s2 = fast.init(ids), lit.init(ids)
    g1, g2 = gen(5), gen(5)
    moves = 0
    for ref_ids, ref_acc, ref_alpha in ref:
        before = s1.ids
        s1, i1 = fast.step(s1, g1)
        s2, i2 = lit.step(s2, g2)
        assert torch.equal(s1.ids, ref_ids) and torch.equal(i1.accepted, ref_acc)
        assert torch.allclose(i1.log_alpha[i1.novel], ref_alpha[i1.novel], rtol=1e-9, atol=1e-9)
        assert torch.equal(s1.ids, s2.ids) and torch.equal(i1.accepted, i2.accepted)
        assert torch.equal(i1.log_alpha[i1.novel], i2.log_alpha[i1.novel])
        moves += int((s1.ids != before).any(-1).sum())
    assert 0 < moves < 24 * 64 and not bool(ref_acc.all())  # both outcomes occur: the comparison has teeth
    # the cached state is that of a fresh computation: energies and single-site rows
    assert torch.equal(s1.e_local, energy(m, s1.ids, kind="local")) and torch.equal(
        s1.e_raw, energy(m, s1.ids, kind="raw")
    )
    assert torch.allclose(s1.e_local, ref_energies(m, s1.ids, "local"))
    assert torch.equal(s1.site_logits, site_logits(m, s1.ids, s1.scored)[0])
    if "block_size" not in kw:  # single site: at most T - 1 rows per proposal, literal 2T + 1
        n_prop = 24 * 64
        assert s1.forward_rows - 64 * 4 <= n_prop * 3
        assert s2.forward_rows == n_prop * 9


def test_single_site_mh_never_recomputes_current_energy():
    m = exact(3, 4)
    k = MetropolisHastings(m)
    s = k.init(torch.randint(3, (10, 4), generator=gen(1)))
    m.calls = 0
    g = gen(2)
    for _ in range(20):
        before = s.ids.clone()
        s, info = k.step(s, g)
        changed = (s.ids != before).any(-1) | (info.active & ~info.accepted)
        assert info.forward_rows <= 3 * int(changed.sum() + (~info.accepted).sum())
    assert m.calls == s.forward_rows - 40


# ---------------------------------------------------- exactness against enumeration (MH)

STATIONARY_CASES = [
    ("single site", {}),
    ("block 2", {"block_size": 2}),
    ("block schedule 3->1", {"block_size": LinearBlockSize(3, 1, 3)}),
    ("temperatures, raw", {"proposal_temperature": 0.6, "target_temperature": 0.7, "energy": "raw"}),
    ("nucleus", {"top_p": 0.75}),
    ("nucleus + temperature, block 2", {"top_p": 0.8, "proposal_temperature": 1.5, "block_size": 2}),
]


@functools.cache
def enumerated(model, name):
    """Model, states, reference energies, target, block-size schedule, and the exact sweep kernels of
    ``mh_reference`` (by block size; the block kernels they are made of in ``blocks``) for a case."""
    kw = dict(STATIONARY_CASES)[name]
    m = exact(3, 3) if model == "exact" else LookupMLM(3, 3, seed=2)
    tau, kind = kw.get("target_temperature", 1.0), kw.get("energy", "local")
    X = all_sequences(3, 3)
    E = ref_energies(m, X, kind)
    bs = kw.get("block_size", 1)
    size = bs if callable(bs) else (lambda e: bs)
    blocks = {}
    K = {
        k: epoch_kernel(m, X, E, tau, k, kw.get("proposal_temperature", 1.0), kw.get("top_p", 1.0), cache=blocks)
        for k in {size(e) for e in range(6)}
    }
    return SimpleNamespace(
        m=m, X=X, E=E, p=torch.softmax(-E / tau, 0), tau=tau, kind=kind, size=size, K=K, blocks=blocks
    )


@pytest.mark.parametrize("name,kw", STATIONARY_CASES, ids=[c[0] for c in STATIONARY_CASES])
@pytest.mark.parametrize("model", ["exact", "lookup"])
def test_mh_leaves_the_enumerated_target_invariant(model, name, kw):
    """Chains started exactly in exp(-E/tau)/Z stay there, whatever the proposal (also for nucleus
    proposals that make the chain reducible); degenerate Gibbs with the same proposal does not. They
    also move as often as the enumerated kernel says, so a chain that never moves fails."""
    c = enumerated(model, name)
    m, tau = c.m, c.tau
    p = target(m, c.kind, tau)
    assert torch.allclose(p, c.p, atol=1e-12)
    n, epochs = 3000, 4
    start = draw_from(m, p, n, seed=7)
    r = sample(m, start, epochs=epochs, generator=gen(11), **kw)
    assert r.samples.shape == (epochs, n, 3)
    assert tv(p, empirical(m, r.samples)) < tv_bound(p, n)
    # novel moves per proposal at stationarity: a block I moves the state with probability
    # sum_x p(x) (1 - K_I(x, x)), averaged over the equally likely sweeps' blocks; each chain's rate has
    # variance <= r (1 - r), so 5 standard errors over the n independent chains
    moved = {b: float((p * (1 - k.diagonal())).sum()) for b, k in c.blocks.items()}
    novel = sum(
        sum(moved[tuple(b)] for b in sweep) / len(sw)
        for e in range(epochs)
        for sw in [sweep_blocks(3, c.size(e))]
        for sweep in sw
    )
    rate = novel / sum(len(sweep_blocks(3, c.size(e))[0]) for e in range(epochs))
    assert abs(r.novel_rate - rate) < 5 * math.sqrt(rate * (1 - rate) / n) and rate > 0.05
    if "block_size" not in kw and "top_p" not in kw:
        wrong = target(m, kw.get("energy", "local"), tau / 2)
        assert tv(wrong, empirical(m, r.samples)) > tv_bound(p, n)
        gk = {k: v for k, v in kw.items() if k not in ("target_temperature", "energy")}
        gibbs = sample(m, start, method="gibbs", epochs=epochs, generator=gen(11), **gk)
        assert tv(p, empirical(m, gibbs.samples)) > tv_bound(p, n)


@pytest.mark.parametrize("name,kw", STATIONARY_CASES, ids=[c[0] for c in STATIONARY_CASES])
@pytest.mark.parametrize("model", ["exact", "lookup"])
def test_mh_from_one_improbable_state_follows_the_enumerated_kernel(model, name, kw):
    """All chains start in one improbable state ``s``. After ``e`` sweeps their law is ``delta_s K^e``,
    ``K`` the exact sweep kernel of Algorithm 1 enumerated by ``mh_reference`` from the target
    ``exp(-E/tau)/Z`` (whose invariance under ``K`` is checked exactly). Some of these cases mix
    too slowly (peaked targets, or reducible under nucleus proposals) for the pooled samples to reach
    the target in a few sweeps, so the samples after burn-in are compared with this exact law rather
    than with the target itself: a kernel that never moves, or with any other transition law, fails."""
    c = enumerated(model, name)
    m, X, p, K, size = c.m, c.X, c.p, c.K, c.size
    burn_in, kept, n = 4, 2, 2000
    for k in K.values():
        assert torch.allclose(p @ k, p, atol=1e-12)
    laws = {}
    for s in p.argsort().tolist():  # the least probable state that the kernel leaves within the burn-in
        d = torch.zeros(len(X), dtype=torch.float64)
        d[s] = 1.0
        laws[s] = []
        for e in range(burn_in + kept):
            d = d @ K[size(e)]
            laws[s].append(d)
        if laws[s][burn_in - 1][s] <= 0.5:
            break
    law = torch.stack(laws[s][burn_in:]).mean(0)  # the kept states: after sweeps burn_in + 1 .. burn_in + kept
    r = sample(m, X[s].expand(n, 3).clone(), epochs=kept, burn_in=burn_in, generator=gen(11), **kw)
    q = empirical(m, r.samples)
    assert float(p[s]) < 1 / len(X) and float(law[s]) < 0.5
    assert tv(law, q) < tv_bound(law, n)
    assert 1 - float(law[s]) > 2 * tv_bound(law, n)  # a chain stuck at the start would fail


@pytest.mark.parametrize("block_size", [1, 2])
def test_mh_converges_from_random_init_and_tv_shrinks(block_size):
    m = LookupMLM(3, 3, seed=2)
    p = target(m)
    n = 4000
    start = torch.randint(3, (n, 3), generator=gen(3))
    r = sample(m, start, init="given", epochs=3, burn_in=25, block_size=block_size, generator=gen(4))
    tvs = {k: tv(p, empirical(m, r.samples[:, :k])) for k in (250, 1000, 4000)}
    for k, d in tvs.items():
        assert d < tv_bound(p, k), (k, d)
    assert tvs[4000] < tvs[250]
    assert tv(target(m, tau=0.5), empirical(m, r.samples)) > tv_bound(p, n)
    assert tv(p, empirical(m, start)) > tv_bound(p, n)  # the start was far from the target


def test_clamped_positions_and_score_all():
    """Free positions {1, 2}: the target conditions on x_0; by default E sums over the free positions,
    with ``score_all`` over all three. Position 0 never changes."""
    m = LookupMLM(3, 3, seed=5)
    X = all_sequences(3, 3)
    n = 3000
    start = torch.randint(3, (n, 3), generator=gen(1))
    start[:, 0] = 2
    X2 = X[X[:, 0] == 2]
    for score_all in (False, True):
        pos = None if score_all else [1, 2]
        p_sub = target(m, positions=pos, X=X2)
        p = torch.zeros(27, dtype=torch.float64)
        p[index_of(m, X2)] = p_sub
        init = X2[torch.multinomial(p_sub, n, replacement=True, generator=gen(2))]
        r = sample(m, init, positions=[1, 2], score_all=score_all, epochs=3, generator=gen(3))
        assert (r.samples[..., 0] == 2).all()
        assert torch.equal(r.free[0], torch.tensor([False, True, True]))
        assert tv(p, empirical(m, r.samples)) < tv_bound(p_sub, n)
        other = target(m, positions=[1, 2] if score_all else None, X=X2)
        assert 0.5 * float((other - p_sub).abs().sum()) > tv_bound(p_sub, n)  # the option matters
        assert torch.allclose(r.energy_local[-1], energy(m, r.final_ids, None if score_all else [1, 2], kind="local"))


# ------------------------------------------------------------------- degenerate Gibbs


def test_gibbs_on_compatible_conditionals_finds_the_joint():
    m = exact(3, 3)
    joint = m.log_prob(all_sequences(3, 3)).exp()
    n = 3000
    r = sample(m, torch.randint(3, (n, 3), generator=gen(0)), method="gibbs", epochs=3, burn_in=8, generator=gen(1))
    assert tv(joint, empirical(m, r.samples)) < tv_bound(joint, n)
    assert r.accept_rate == 1.0
    assert tv(target(m), empirical(m, r.samples)) > tv_bound(joint, n)  # the PLL target is another law


def test_block_gibbs_with_parallel_conditionals_is_not_exact_but_block_mh_is():
    """k-Gibbs with an MLM's product of single-site marginals (Li et al.) misses even a compatible
    joint; MH with the same block proposal targets exp(-E)/Z exactly."""
    m = exact(3, 3, seed=4)
    joint = m.log_prob(all_sequences(3, 3)).exp()
    n = 3000
    start = draw_from(m, joint, n, seed=1)
    gib = sample(m, start, method="gibbs", block_size=3, epochs=3, generator=gen(2))
    assert tv(joint, empirical(m, gib.samples)) > tv_bound(joint, n)
    p = target(m)
    mh = sample(m, draw_from(m, p, n, seed=1), method="mh", block_size=3, epochs=3, generator=gen(2))
    assert tv(p, empirical(m, mh.samples)) < tv_bound(p, n)
    # it moves as often as the enumerated kernel says: the novel-move rate of one whole-sequence proposal
    # at stationarity; each chain's mean over its 3 proposals has variance <= r (1 - r), so 5 s.e. over n chains
    X = all_sequences(3, 3)
    r = float((p * (1 - block_kernel(m, X, ref_energies(m, X), 1.0, [0, 1, 2]).diagonal())).sum())
    assert abs(mh.novel_rate - r) < 5 * math.sqrt(r * (1 - r) / n) and r > 0.1
    # the same block-Gibbs kernel run from the MH target drifts away from it: the acceptance step matters
    gib_p = sample(m, draw_from(m, p, n, seed=1), method="gibbs", block_size=3, epochs=3, generator=gen(2))
    assert tv(p, empirical(m, gib_p.samples)) > tv_bound(p, n)


def _systematic_gibbs_stationary(m):
    """Stationary law of the l2r single-site Gibbs epoch kernel, by enumeration."""
    X = all_sequences(m.vocab_size, m.length)
    K = X.shape[0]
    kern = torch.eye(K, dtype=torch.float64)
    for i in range(m.length):
        masked = X.clone()
        masked[:, i] = m.mask_id
        q = torch.softmax(m.logits(masked)[:, i].double(), -1)  # [K, V]
        P = torch.zeros(K, K, dtype=torch.float64)
        for v in range(m.vocab_size):
            Y = X.clone()
            Y[:, i] = v
            P[torch.arange(K), index_of(m, Y)] += q[:, v]
        kern = kern @ P
    w, vecs = torch.linalg.eig(kern.T)
    pi = vecs[:, (w - 1).abs().argmin()].real
    return pi / pi.sum()


def test_gibbs_on_incompatible_conditionals_converges_elsewhere():
    m = LookupMLM(3, 3, seed=2)
    pi = _systematic_gibbs_stationary(m)
    p = target(m)
    n = 4000
    r = sample(
        m,
        torch.randint(3, (n, 3), generator=gen(0)),
        method="gibbs",
        order="l2r",
        epochs=3,
        burn_in=10,
        generator=gen(1),
    )
    q = empirical(m, r.samples)
    assert tv(pi, q) < tv_bound(pi, n)
    assert tv(p, q) > tv_bound(p, n) and tv(pi, p) > 0.1


def test_block_gibbs_at_temperature_zero_is_mask_predict():
    m = LookupMLM(4, 3, seed=1)
    start = torch.full((5, 3), m.mask_id)
    start[:, 0] = torch.arange(5) % 4
    r = sample(
        m, start, method="gibbs", block_size=3, proposal_temperature=0.0, epochs=1, positions=[1, 2], generator=gen(0)
    )
    mp = mask_predict(m, start, iterations=1, positions=[1, 2])
    assert torch.equal(r.samples[0], mp.ids)
