"""Synthetic languages against brute-force enumeration over V**T sequences."""

import math

import pytest
import torch

import mlmprob
from mlmprob import ExactMLM, MLMProbError
from mlmprob.models.exact import all_sequences
from mlmprob.synthetic import HMM, ChainLanguage, PottsChain, PottsGrid, load_language, make_language, save_language

pytestmark = pytest.mark.usefixtures("one_thread")


# -- independent references ----------------------------------------------------------------------
def potts_log_joint(lang: PottsChain) -> torch.Tensor:
    V, T = lang.vocab_size, lang.length
    seqs = all_sequences(V, T)
    e = torch.zeros(len(seqs), dtype=torch.float64)
    for t in range(T):
        e += lang.fields[t, seqs[:, t]]
    for t in range(T - 1):
        e += lang.coupling * (seqs[:, t] == seqs[:, t + 1]).double()
    return (e - torch.logsumexp(e, 0)).reshape([V] * T)


def hmm_log_joint(lang: HMM) -> torch.Tensor:
    V, T, S = lang.vocab_size, lang.length, lang.n_states
    xs, zs = all_sequences(V, T), all_sequences(S, T)
    lp = lang.initial.log()[zs[:, 0]][None, :].expand(len(xs), -1).clone()  # [Nx, Nz]
    for t in range(T - 1):
        lp += lang.transition.log()[zs[:, t], zs[:, t + 1]][None, :]
    for t in range(T):
        lp += lang.hmm_emission.log()[zs[:, t][None, :], xs[:, t][:, None]]
    return torch.logsumexp(lp, 1).reshape([V] * T)


def grid_log_joint(lang: PottsGrid) -> torch.Tensor:
    V, R, C = lang.vocab_size, lang.rows, lang.cols
    seqs = all_sequences(V, R * C)
    g = seqs.reshape(-1, R, C)
    e = torch.zeros(len(seqs), dtype=torch.float64)
    for r in range(R):
        for c in range(C):
            e += lang.fields[r, c, g[:, r, c]]
            if r + 1 < R:
                e += lang.coupling * (g[:, r, c] == g[:, r + 1, c]).double()
            if c + 1 < C:
                e += lang.coupling * (g[:, r, c] == g[:, r, c + 1]).double()
    return (e - torch.logsumexp(e, 0)).reshape([V] * (R * C))


def brute_conditionals(log_joint: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """float64 log p(x_t | observed positions other than t), by summing over consistent sequences."""
    V, T = log_joint.shape[0], log_joint.dim()
    seqs, lj = all_sequences(V, T), log_joint.flatten()
    out = torch.empty(len(ids), T, V, dtype=torch.float64)
    for b, row in enumerate(ids):
        for t in range(T):
            keep = torch.ones(len(seqs), dtype=torch.bool)
            for s in range(T):
                if s != t and row[s] < V:
                    keep &= seqs[:, s] == row[s]
            w = torch.full((V,), -math.inf, dtype=torch.float64)
            for v in range(V):
                w[v] = torch.logsumexp(lj[keep & (seqs[:, t] == v)], 0)
            out[b, t] = w - torch.logsumexp(w, 0)
    return out


def brute_marginal(log_joint: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    V, T = log_joint.shape[0], log_joint.dim()
    seqs, lj = all_sequences(V, T), log_joint.flatten()
    out = []
    for row in ids:
        keep = torch.ones(len(seqs), dtype=torch.bool)
        for s in range(T):
            if row[s] < V:
                keep &= seqs[:, s] == row[s]
        out.append(torch.logsumexp(lj[keep], 0))
    return torch.stack(out)


def random_masked_ids(V, T, n, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (n, T), generator=g)
    mask = torch.rand(n, T, generator=g) < 0.5
    mask[0] = True  # everything masked
    mask[1] = False  # nothing masked
    return ids.masked_fill(mask, V)


CASES = [
    (
        "potts",
        lambda: PottsChain(3, 5, coupling=1.5, field_scale=1.0, generator=torch.Generator().manual_seed(0)),
        potts_log_joint,
    ),
    (
        "potts-antiferro",
        lambda: PottsChain(4, 4, coupling=-2.0, generator=torch.Generator().manual_seed(1)),
        potts_log_joint,
    ),
    ("hmm", lambda: HMM.random(3, 3, 5, generator=torch.Generator().manual_seed(2), concentration=0.7), hmm_log_joint),
    (
        "hmm-v4",
        lambda: HMM.random(4, 2, 4, generator=torch.Generator().manual_seed(3), concentration=0.3),
        hmm_log_joint,
    ),
    ("grid", lambda: PottsGrid(3, 2, 3, coupling=1.2, generator=torch.Generator().manual_seed(4)), grid_log_joint),
    ("grid-3x2", lambda: PottsGrid(2, 3, 2, coupling=-0.8, generator=torch.Generator().manual_seed(5)), grid_log_joint),
]


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES], scope="module")
def case(request):
    _, make, ref = request.param
    lang = make()
    return lang, ref(lang)


# -- exactness -------------------------------------------------------------------------------------
def test_log_prob_and_joint_match_enumeration(case):
    lang, lj = case
    seqs = all_sequences(lang.vocab_size, lang.length)
    assert torch.allclose(lang.log_prob(seqs), lj.flatten(), atol=1e-10)
    assert torch.allclose(lang.log_marginal(seqs), lj.flatten(), atol=1e-10)  # the forward pass, too
    assert torch.allclose(lang.log_joint(), lj, atol=1e-10)


def test_conditionals_match_enumeration_for_random_masks(case):
    lang, lj = case
    V, T = lang.vocab_size, lang.length
    ids = random_masked_ids(V, T, 24, seed=7)
    got = lang.conditionals(ids)
    assert got.dtype == torch.float64 and got.shape == (24, T, V)
    assert torch.allclose(got, brute_conditionals(lj, ids), atol=1e-10)
    # the package's own exact model built from the enumerated joint agrees (float32 logits)
    assert torch.allclose(got.float(), ExactMLM(lj).logits(ids), atol=1e-5)
    assert torch.allclose(lang.log_marginal(ids), brute_marginal(lj, ids), atol=1e-10)


def test_conditionals_are_not_trivially_right():
    """The reference can fail: a language with other fields has other conditionals."""
    a = PottsChain(3, 4, coupling=1.0, generator=torch.Generator().manual_seed(0))
    b = PottsChain(3, 4, coupling=1.2, generator=torch.Generator().manual_seed(0))
    ids = random_masked_ids(3, 4, 8, seed=1)
    assert not torch.allclose(a.conditionals(ids), brute_conditionals(potts_log_joint(b), ids), atol=1e-3)


# -- sampling ------------------------------------------------------------------------------------
def tv_threshold(p: torch.Tensor, n: int, delta: float = 1e-6) -> float:
    """E[TV(empirical, p)] <= 1/2 sum sqrt(p(1-p)/n); McDiarmid adds sqrt(log(1/delta) / 2n)."""
    return float(0.5 * torch.sqrt(p * (1 - p) / n).sum()) + math.sqrt(math.log(1 / delta) / (2 * n))


def empirical(samples: torch.Tensor, V: int) -> torch.Tensor:
    T = samples.shape[1]
    idx = (samples * (V ** torch.arange(T - 1, -1, -1))).sum(-1)
    return torch.bincount(idx, minlength=V**T).double() / len(samples)


@pytest.mark.parametrize("which", [0, 2, 4])
def test_samples_follow_the_exact_distribution(which):
    _, make, ref = CASES[which]
    lang = make()
    p = ref(lang).flatten().exp()
    n = 20000
    x = lang.sample(n, torch.Generator().manual_seed(11))
    assert x.shape == (n, lang.length) and x.dtype == torch.long
    q = empirical(x, lang.vocab_size)
    tol = tv_threshold(p, n)
    assert 0.5 * (q - p).abs().sum() < tol
    # the test can fail: the same samples are far from another language's distribution
    other = ref(make_other(lang)).flatten().exp()
    assert 0.5 * (q - other).abs().sum() > tol


def make_other(lang):
    if isinstance(lang, PottsChain):
        return PottsChain(lang.vocab_size, lang.length, coupling=0.0, fields=lang.fields)
    if isinstance(lang, PottsGrid):
        return PottsGrid(lang.vocab_size, lang.rows, lang.cols, coupling=0.0, fields=lang.fields)
    return HMM.random(lang.vocab_size, lang.n_states, lang.length, generator=torch.Generator().manual_seed(99))


def test_conditional_samples_follow_the_exact_conditional():
    lang = HMM.random(3, 3, 5, generator=torch.Generator().manual_seed(2), concentration=0.7)
    lj = hmm_log_joint(lang)
    V, T, M = 3, 5, 3
    row = torch.tensor([M, 2, M, 0, M])  # positions 0, 2, 4 free
    n = 12000
    x = lang.sample_given(row.expand(n, T), torch.Generator().manual_seed(5))
    assert (x[:, [1, 3]] == torch.tensor([2, 0])).all()
    free = [0, 2, 4]
    q = empirical(x[:, free], V)
    p = lj[:, 2, :, 0, :].flatten()
    p = (p - torch.logsumexp(p, 0)).exp()
    assert 0.5 * (q - p).abs().sum() < tv_threshold(p, n)


def test_sampling_is_reproducible_and_uses_the_generator():
    lang = PottsChain(5, 12, coupling=1.0, generator=torch.Generator().manual_seed(0))
    a = lang.sample(50, torch.Generator().manual_seed(3))
    b = lang.sample(50, torch.Generator().manual_seed(3))
    c = lang.sample(50, torch.Generator().manual_seed(4))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert lang.sample(0).shape == (0, 12)


def test_coupling_controls_dependence():
    """Mutual information of neighbours (exact, from pair marginals) grows with the coupling."""

    def neighbour_mi(J):
        lang = PottsChain(3, 4, coupling=J, generator=torch.Generator().manual_seed(0))
        lj = lang.log_joint()
        pab = torch.logsumexp(lj, dim=(2, 3)).exp()
        pa, pb = pab.sum(1, keepdim=True), pab.sum(0, keepdim=True)
        return float((pab * (pab / (pa * pb)).log()).sum())

    mis = [neighbour_mi(J) for J in (0.0, 1.0, 3.0)]
    assert mis[0] < 1e-12 and mis[0] < mis[1] < mis[2]


def test_larger_languages_run_vectorised():
    lang = HMM.random(50, 8, 32, generator=torch.Generator().manual_seed(0))
    x = lang.sample(16, torch.Generator().manual_seed(0))
    c = lang.conditionals(x.masked_fill(torch.rand(16, 32, generator=torch.Generator().manual_seed(1)) < 0.3, 50))
    assert c.shape == (16, 32, 50)
    assert torch.isfinite(lang.log_prob(x)).all()
    # a position masked alone: its conditional is the joint over its 50 values, renormalised (brute force)
    for b, t in [(0, 0), (3, 17), (15, 31)]:
        y = x[b].clone()
        y[t] = 50
        rows = x[b].repeat(50, 1)
        rows[:, t] = torch.arange(50)
        ref = torch.log_softmax(lang.log_prob(rows).double(), 0)
        torch.testing.assert_close(lang.conditionals(y[None])[0, t].double(), ref, atol=1e-9, rtol=0)


# -- adapter: the language as the ground-truth MaskedLM -------------------------------------------
def test_adapter_works_with_pll_and_pairwise_joint():
    lang = PottsChain(3, 5, coupling=2.0, generator=torch.Generator().manual_seed(0))
    lj = potts_log_joint(lang)
    mlm, ref = lang.as_mlm(), ExactMLM(lj)
    assert isinstance(mlm, mlmprob.MaskedLM)
    x = lang.sample(6, torch.Generator().manual_seed(1))
    assert torch.allclose(mlmprob.pll(mlm, x), mlmprob.pll(ref, x), atol=1e-5)
    assert mlm.calls > 0
    row = x[0]
    a, b = 1, 3
    hcb = mlmprob.pairwise_joint(mlm, row, a, b, method="hcb")
    # exact joint of (x_a, x_b) given the rest, by enumeration
    sl = [int(v) for v in row]
    idx = tuple(slice(None) if t in (a, b) else sl[t] for t in range(5))
    exact = lj[idx]
    exact = exact - torch.logsumexp(exact.flatten(), 0)
    assert torch.allclose(hcb, exact, atol=1e-5)


def test_adapter_validates_input():
    mlm = PottsChain(3, 4, generator=torch.Generator().manual_seed(0)).as_mlm()
    with pytest.raises(MLMProbError, match=r"shape \[B, 4\]"):
        mlm.logits(torch.zeros(2, 5, dtype=torch.long))
    with pytest.raises(MLMProbError, match="0..3"):
        mlm.logits(torch.full((1, 4), 4))
    with pytest.raises(MLMProbError, match="no mask"):
        mlm.language.log_prob(torch.tensor([[0, 3, 1, 1]]))


def test_bad_parameters_raise():
    with pytest.raises(MLMProbError, match="vocab_size"):
        PottsChain(1, 4)
    with pytest.raises(MLMProbError, match="concentration"):
        HMM.random(3, 2, 4, concentration=0.0)
    with pytest.raises(MLMProbError, match="emission"):
        ChainLanguage(torch.zeros(3, 2), torch.zeros(2, 2), torch.zeros(2, 4))  # rows not normalised
    with pytest.raises(MLMProbError, match="too many"):
        PottsGrid(50, 4, 2)
    with pytest.raises(MLMProbError, match="divisible"):
        make_language("grid", 3, 5, rows=2)
    with pytest.raises(MLMProbError, match="unknown synthetic"):
        make_language("ising2d", 3, 4)


@pytest.mark.parametrize("kind", ["potts", "hmm", "grid"])
def test_save_load_roundtrip(tmp_path, kind):
    lang = make_language(kind, 4, 6, seed=5)
    path = save_language(lang, tmp_path / "lang.safetensors")
    back = load_language(path)
    assert type(back) is type(lang) and back.spec() == lang.spec()
    ids = random_masked_ids(4, 6, 5, seed=0)
    assert torch.equal(back.conditionals(ids), lang.conditionals(ids))
    assert torch.equal(make_language(kind, 4, 6, seed=5).conditionals(ids), lang.conditionals(ids))  # seeded


def test_enumeration_guard():
    with pytest.raises(MLMProbError, match="too many"):
        HMM.random(50, 2, 32, generator=torch.Generator().manual_seed(0)).log_joint()
