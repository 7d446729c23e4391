"""Samplers against exact enumeration on tiny models (V 3-4, T 3-4).

Statistical tests run thousands of chains in one batch with fixed generators. Their tolerance is
a TV bound from the number of independent chains ``n``: ``E[TV] <= 1/2 sum_x sqrt(p(1-p)/n)``
plus a McDiarmid deviation ``sqrt(log(1/delta) / (2n))`` (changing one chain's trajectory moves
the pooled empirical distribution by at most ``1/n`` in TV). Each test also checks that a wrong
target lies outside the bound, so that it can fail.
"""

import math

import pytest
import torch

from mlmprob import ExactMLM, energy
from mlmprob.errors import MLMProbError, PositionsError
from mlmprob.models.exact import LookupMLM, all_sequences
from mlmprob.sampling import (LinearAnneal, LinearBlockSize, LiteralMH, MetropolisHastings,
                              ProposalConfig, effective_sample_size, find_cdr_h3, identity, mask_predict,
                              proposal_log_probs, sample, split_rhat, sweep_plan)
from mlmprob.sampling.forward import site_logits
from mlmprob.sampling.io import read_run

DELTA = 1e-6


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads only add contention on a shared CPU
    yield
    torch.set_num_threads(n)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def exact(V=3, T=3, seed=1):
    return ExactMLM.random(V, T, gen(seed), scale=1.0)


def target(mlm, kind="local", tau=1.0, positions=None, X=None):
    X = all_sequences(mlm.vocab_size, mlm.length) if X is None else X
    lp = -energy(mlm, X, kind, positions) / tau
    return (lp - lp.logsumexp(0)).exp()


def index_of(mlm, ids):
    base = mlm.vocab_size ** torch.arange(mlm.length - 1, -1, -1)
    return (ids.reshape(-1, mlm.length) * base).sum(-1)


def empirical(mlm, samples):
    c = torch.bincount(index_of(mlm, samples), minlength=mlm.vocab_size ** mlm.length).double()
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
    assert torch.allclose(proposal_log_probs(logits, config=ProposalConfig(2.0)).exp(),
                          torch.softmax(logits.double() / 2, -1))
    lp = proposal_log_probs(logits, config=ProposalConfig(top_p=0.9))
    assert torch.isinf(lp[0, 3]) and torch.allclose(lp[0, :3].exp().sum(), torch.tensor(1.0, dtype=torch.float64))
    lp = proposal_log_probs(logits, torch.tensor([False, True, True, True]), ProposalConfig(top_p=0.5))
    assert torch.isinf(lp[0, 0]) and lp[0, 1] == 0   # 0.3/0.5 = 0.6 >= 0.5: a single token
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
    r = sample(m, torch.zeros(3, 3, dtype=torch.long), epochs=3, burn_in=2, block_size=LinearBlockSize(3, 1, 3),
               target_temperature=LinearAnneal(1.0, 0.3, 0.2), generator=gen(0))
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
    g = gen(0)
    rho, n = 0.8, 4000
    x = torch.zeros(4, n, dtype=torch.float64)
    noise = torch.randn(4, n, generator=g, dtype=torch.float64)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + noise[:, t]
    expected = 4 * n * (1 - rho) / (1 + rho)          # AR(1): tau = (1 + rho) / (1 - rho)
    assert 0.7 * expected < effective_sample_size(x) < 1.3 * expected
    assert abs(split_rhat(x) - 1) < 0.05
    assert split_rhat(x + 5 * torch.arange(4.0, dtype=torch.float64)[:, None]) > 2
    assert math.isnan(effective_sample_size(torch.ones(2, 10)))
    assert identity(torch.tensor([[1, 2]]), torch.tensor([[1, 3]]), torch.tensor([[True, True]])).item() == 0.5


# ------------------------------------------------------------------ the kernel is Algorithm 1

@pytest.mark.parametrize("model", ["exact", "lookup"])
@pytest.mark.parametrize("kw", [{}, {"block_size": 2},
                                {"proposal": ProposalConfig(0.7, 0.9), "target_temperature": 0.8, "energy": "raw"}])
def test_fast_mh_equals_literal_algorithm_1(model, kw):
    """Same generator, same chains: the reuse kernel makes exactly Algorithm 1's decisions."""
    m = exact(3, 4) if model == "exact" else LookupMLM(3, 4, seed=2)
    ids = torch.randint(3, (64, 4), generator=gen(0))
    fast, lit = MetropolisHastings(m, **kw), LiteralMH(m, **kw)
    s1, s2 = fast.init(ids), lit.init(ids)
    g1, g2 = gen(5), gen(5)
    for _ in range(24):
        s1, i1 = fast.step(s1, g1)
        s2, i2 = lit.step(s2, g2)
        assert torch.equal(s1.ids, s2.ids) and torch.equal(i1.accepted, i2.accepted)
        assert torch.equal(i1.log_alpha[i1.novel], i2.log_alpha[i1.novel])
    # the cached state is that of a fresh computation: energies and single-site rows
    assert torch.equal(s1.e_local, energy(m, s1.ids, "local")) and torch.equal(s1.e_raw, energy(m, s1.ids, "raw"))
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


@pytest.mark.parametrize("name,kw", STATIONARY_CASES, ids=[c[0] for c in STATIONARY_CASES])
@pytest.mark.parametrize("model", ["exact", "lookup"])
def test_mh_leaves_the_enumerated_target_invariant(model, name, kw):
    """Chains started exactly in exp(-E/tau)/Z stay there, whatever the proposal (also for nucleus
    proposals that make the chain reducible); degenerate Gibbs with the same proposal does not."""
    m = exact(3, 3) if model == "exact" else LookupMLM(3, 3, seed=2)
    tau = kw.get("target_temperature", 1.0)
    p = target(m, kw.get("energy", "local"), tau)
    n = 3000
    start = draw_from(m, p, n, seed=7)
    r = sample(m, start, epochs=4, generator=gen(11), **kw)
    assert r.samples.shape == (4, n, 3)
    assert tv(p, empirical(m, r.samples)) < tv_bound(p, n)
    assert r.accept_rate < 1.0
    if "block_size" not in kw and "top_p" not in kw:
        wrong = target(m, kw.get("energy", "local"), tau / 2)
        assert tv(wrong, empirical(m, r.samples)) > tv_bound(p, n)
        gk = {k: v for k, v in kw.items() if k not in ("target_temperature", "energy")}
        gibbs = sample(m, start, method="gibbs", epochs=4, generator=gen(11), **gk)
        assert tv(p, empirical(m, gibbs.samples)) > tv_bound(p, n)


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
    assert tv(p, empirical(m, start)) > tv_bound(p, n)          # the start was far from the target


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
        assert torch.allclose(r.energy_local[-1], energy(m, r.final_ids, "local", None if score_all else [1, 2]))


# ------------------------------------------------------------------- degenerate Gibbs

def test_gibbs_on_compatible_conditionals_finds_the_joint():
    m = exact(3, 3)
    joint = m.log_prob(all_sequences(3, 3)).exp()
    n = 3000
    r = sample(m, torch.randint(3, (n, 3), generator=gen(0)), method="gibbs", epochs=3, burn_in=8, generator=gen(1))
    assert tv(joint, empirical(m, r.samples)) < tv_bound(joint, n)
    assert r.accept_rate == 1.0
    assert tv(target(m), empirical(m, r.samples)) > tv_bound(joint, n)   # the PLL target is another law


def test_block_gibbs_with_parallel_conditionals_is_not_exact_but_block_mh_is():
    """k-Gibbs with an MLM's product of single-site marginals (Li et al.) misses even a compatible
    joint; MH with the same block proposal targets exp(-E)/Z exactly."""
    m = exact(3, 3, seed=4)
    joint = m.log_prob(all_sequences(3, 3)).exp()
    n = 3000
    start = draw_from(m, joint, n, seed=1)
    gib = sample(m, start, method="gibbs", block_size=3, epochs=3, generator=gen(2))
    assert tv(joint, empirical(m, gib.samples)) > tv_bound(joint, n)


def _systematic_gibbs_stationary(m):
    """Stationary law of the l2r single-site Gibbs epoch kernel, by enumeration."""
    X = all_sequences(m.vocab_size, m.length)
    K = X.shape[0]
    kern = torch.eye(K, dtype=torch.float64)
    for i in range(m.length):
        masked = X.clone()
        masked[:, i] = m.mask_id
        q = torch.softmax(m.logits(masked)[:, i].double(), -1)          # [K, V]
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
    r = sample(m, torch.randint(3, (n, 3), generator=gen(0)), method="gibbs", order="l2r", epochs=3, burn_in=10,
               generator=gen(1))
    q = empirical(m, r.samples)
    assert tv(pi, q) < tv_bound(pi, n)
    assert tv(p, q) > tv_bound(p, n) and tv(pi, p) > 0.1


def test_block_gibbs_at_temperature_zero_is_mask_predict():
    m = LookupMLM(4, 3, seed=1)
    start = torch.full((5, 3), m.mask_id)
    start[:, 0] = torch.arange(5) % 4
    r = sample(m, start, method="gibbs", block_size=3, proposal_temperature=0.0, epochs=1, positions=[1, 2],
               generator=gen(0))
    mp = mask_predict(m, start, iterations=1, positions=[1, 2])
    assert torch.equal(r.samples[0], mp.ids)


# --------------------------------------------------------------------------- mask-predict

def _greedy_pass(m, ids, masked):
    x = ids.clone()
    x[masked] = m.mask_id
    lp = torch.log_softmax(m.logits(x).double(), -1)
    conf, tok = lp.max(-1)
    return tok, conf


def test_mask_predict_against_brute_force():
    m = LookupMLM(4, 4, seed=3)
    ids = torch.randint(4, (6, 4), generator=gen(0))
    N = 3
    r = mask_predict(m, ids, iterations=N, positions=[0, 1, 2, 3])
    for b in range(6):
        x = ids[b:b + 1].clone()
        free = torch.ones(1, 4, dtype=torch.bool)
        tok, conf = _greedy_pass(m, x, free)
        x, c = tok.clone(), conf.clone()
        for t in range(1, N):
            k = 4 * (N - t) // N
            low = sorted(range(4), key=lambda i: (float(c[0, i]), i))[:k]
            mask = torch.zeros(1, 4, dtype=torch.bool)
            mask[0, low] = True
            tok, conf = _greedy_pass(m, x, mask)
            x[mask], c[mask] = tok[mask], conf[mask]
        assert torch.equal(r.ids[b], x[0]), b
    assert r.history.shape == (N, 6, 4)


def test_easy_first_against_brute_force_and_clamping():
    m = LookupMLM(3, 4, seed=4)
    ids = torch.randint(3, (4, 4), generator=gen(1))
    r = mask_predict(m, ids, iterations=2, positions=[1, 2, 3], strategy="easy_first")
    assert torch.equal(r.ids[:, 0], ids[:, 0])
    for b in range(4):
        free = torch.tensor([[False, True, True, True]])
        tok, conf = _greedy_pass(m, ids[b:b + 1], free)
        x = ids[b:b + 1].clone()
        x[free] = tok[free]
        order = sorted([1, 2, 3], key=lambda i: (-float(conf[0, i]), i))
        new = x.clone()
        for j, i in enumerate(order):
            mask = torch.zeros(1, 4, dtype=torch.bool)
            mask[0, order[j:]] = True
            t2, _ = _greedy_pass(m, x, mask)
            new[0, i] = t2[0, i]
        assert torch.equal(r.ids[b], new[0]), b


# ------------------------------------------------------------------ driver, I/O, inputs

def test_result_fields_burn_in_thinning_reference():
    m = exact(3, 3)
    ids = torch.randint(3, (6, 3), generator=gen(0))
    r = sample(m, ids, epochs=6, burn_in=2, thin=2, generator=gen(1), reference=ids[0])
    assert r.kept_epochs.tolist() == [3, 5, 7]
    assert r.samples.shape == (3, 6, 3) and torch.equal(r.samples[-1], r.final_ids)
    assert r.energy_local.shape == (8, 6) and r.accept.shape == (8, 6) and r.identity.shape == (8, 6)
    assert ((r.novel <= r.accept) & (r.accept <= 1)).all()
    assert torch.allclose(r.energy_raw[-1], energy(m, r.final_ids, "raw"))
    assert 0 < r.novel_rate <= r.accept_rate <= 1 and r.proposals == 8 * 6 * 3


def test_initialisation_modes():
    m = exact(4, 3)
    masked = torch.full((2, 3), m.mask_id)
    r = sample(m, masked, epochs=1, generator=gen(0))                 # masks at free positions: greedy fill
    assert (r.samples < 4).all()
    rnd = sample(m, torch.zeros(2000, 3, dtype=torch.long), init="random", epochs=1, generator=gen(0),
                 proposal_temperature=0.0)  # greedy proposals never move: the state is the random start
    counts = torch.bincount(rnd.samples.flatten(), minlength=4)
    assert (counts > 1200).all()
    g1 = sample(m, torch.zeros(1, 3, dtype=torch.long), init="greedy", epochs=1, generator=gen(0),
                proposal_temperature=0.0)
    x = torch.full((1, 3), m.mask_id)
    assert torch.equal(g1.samples[0], m.logits(x).argmax(-1))


def test_jsonl_resume_matches_an_uninterrupted_run(tmp_path):
    m = LookupMLM(3, 4, seed=1)
    ids = torch.randint(3, (20, 4), generator=gen(0))
    kw = dict(burn_in=2, block_size=2, generator=None)
    full = sample(m, ids, epochs=6, **{**kw, "generator": gen(9)})
    path = tmp_path / "run.jsonl"
    sample(m, ids, epochs=2, jsonl=path, **{**kw, "generator": gen(9)})     # "killed" after 4 epochs
    with path.open("a") as f:
        f.write('{"type": "epoch", "epoch": 4, "kept"')                     # a line cut by the kill
    resumed = sample(m, ids, epochs=6, jsonl=path, **{**kw, "generator": gen(123)})
    assert torch.equal(full.samples, resumed.samples)
    assert torch.equal(full.energy_local, resumed.energy_local) and torch.equal(full.accept, resumed.accept)
    head, recs = read_run(path)
    assert len(recs) == 8 and head["config"]["block_size"] == "Constant(value=2)"
    with pytest.raises(MLMProbError, match="top_p"):
        sample(m, ids, epochs=6, jsonl=path, top_p=0.9, **{**kw, "generator": gen(9)})


def test_bad_inputs_raise_clear_errors():
    m = exact(3, 3)
    ids = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(MLMProbError, match="method"):
        sample(m, ids, method="hmc", epochs=1)
    with pytest.raises(MLMProbError, match="epochs"):
        sample(m, ids, epochs=0)
    with pytest.raises(MLMProbError, match="shape"):
        sample(m, torch.zeros(3, dtype=torch.long), epochs=1)
    with pytest.raises(PositionsError, match="mask token"):
        sample(m, torch.tensor([[0, 3, 0]]), positions=[0], epochs=1)
    with pytest.raises(MLMProbError, match="order"):
        sample(m, ids, order="r2l", epochs=1)
    with pytest.raises(MLMProbError, match="block size"):
        sample(m, ids, block_size=lambda e: 0, epochs=1)


def test_find_cdr_h3():
    fr = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    vh = fr + "WGGDGFYAMD" + "YWGQGTLVTVSS"   # trastuzumab: Mason et al. vary the 10 residues after C-S-R
    s, e = find_cdr_h3(vh, "kabat")
    assert vh[s:e] == "WGGDGFYAMDY" and (s, e) == (len(fr), len(fr) + 11)
    s, e = find_cdr_h3(vh)
    assert vh[s:e] == "SRWGGDGFYAMDY"
    with pytest.raises(MLMProbError, match="CDR-H3"):
        find_cdr_h3("DIQMTQSPSSLSASVGDRVTITCRASQ")


def test_plot_writes_png(tmp_path):
    from mlmprob.sampling.plots import plot_traces
    m = exact(3, 3)
    ids = torch.zeros(3, 3, dtype=torch.long)
    r = sample(m, ids, epochs=3, burn_in=1, generator=gen(0), reference=ids)
    out = plot_traces(r, tmp_path / "trace.png")
    assert out.read_bytes()[:4] == b"\x89PNG"
