"""Exactness of the design kernel's moves (:mod:`mlmprob.mcmc.moves`) on the enumerable toy of
``design_toys`` (two tiny BERTs with incompatible conditionals, an oracle, Hamming, constraints):

- multi-site plain moves, locally balanced (informed) moves and delayed acceptance each have an exact transition
  matrix, built here by brute force over every move (every ordered choice of sites and every residue, written
  out independently of the package's code), whose stationary law is the constrained target; without the Hastings
  correction (or, for delayed acceptance, without its second stage's correction) it is not: each test has power;
- the kernel itself, started from exact draws of the target, keeps the target law after a few steps, within a
  tolerance from the sample size; a kernel with the reverse proposal dropped does not.
"""

import itertools
import math

import pytest
import torch
from design_toys import enumerate_space, exact_law, toy_target
from test_design_exact import stationary, tv_tolerance

from mlmprob.designing.kernels import changeable_sites, mh_kernel

TAU = 1.3


@pytest.fixture(scope="module")
def toy():
    target, spec = toy_target(temperature=TAU)
    X = enumerate_space(target)
    return target, X, exact_law(target, X, TAU)


def _rows_and_energies(target, X, proposal):
    E, rows = target.energies(X, rows_of=proposal)
    cheap = [k for k in range(len(target.terms)) if k not in target.experts]
    Uc = (E[:, cheap] * target.weights[cheap]).sum(-1)
    return target.total(E), Uc, rows


def _site_q(rows, s, j, allowed, T):
    """``q_j`` over the allowed residues at ``j`` from the rows of state ``s`` (uniform without rows)."""
    ok = allowed[j].nonzero(as_tuple=True)[0].tolist()
    logits = [0.0 if rows is None else float(rows[s, j, a]) / T for a in ok]
    top = max(logits)
    z = sum(math.exp(v - top) for v in logits)
    return {a: math.exp(v - top) / z for a, v in zip(ok, logits)}


def _path_prob(x, rows, s, order, y, allowed, sites, informed, T, k):
    """The probability that a move from ``x`` (rows ``rows[s]``) picks the sites ``order`` (in that order) and puts
    ``y``'s residues there; for plain moves the choice of sites (uniform, the same both ways) is left out."""
    if not informed:
        p = 1.0
        for j in order:
            p *= _site_q(rows, s, j, allowed, T).get(y[j], 0.0)
        return p
    used, p = set(), 1.0
    for j in order:
        w = {}
        for i in sites:
            if i in used:
                continue
            for a in allowed[i].nonzero(as_tuple=True)[0].tolist():
                if a != x[i]:
                    d = 0.0 if rows is None else (float(rows[s, i, a]) - float(rows[s, i, x[i]])) / T
                    w[(i, a)] = math.exp(0.5 * d)
        p *= w.get((j, y[j]), 0.0) / sum(w.values())
        used.add(j)
    return p


def transition_matrix(
    target, X, proposal, k=1, informed=False, delayed=False, T=1.0, hastings=True, second=True, x_rows_back=False
):
    """The kernel's exact transition matrix on ``X``, by brute force over every move."""
    U, Uc, rows = _rows_and_energies(target, X, proposal)
    allowed = target.allowed
    sites = changeable_sites(allowed).tolist()
    index = {tuple(x): s for s, x in enumerate(X.tolist())}
    w_p = 0.0 if proposal is None else float(target.weights[proposal])
    unmasked = proposal is not None and target.terms[proposal].kind == "mutant_marginal"
    states = X.tolist()
    n_orders = math.perm(len(sites), k)

    def est(s, t, order, rows_of):  # the first stage's log ratio of s -> t from the rows of ``rows_of``
        x, y = states[s], states[t]
        e = -(float(Uc[t]) - float(Uc[s])) / TAU
        if proposal is not None:
            e += w_p * sum(float(rows[rows_of, j, y[j]]) - float(rows[rows_of, j, x[j]]) for j in order) / TAU
        back = _path_prob(y, rows, rows_of, order, x, allowed, sites, informed, T, k)
        fwd = _path_prob(x, rows, rows_of, order, y, allowed, sites, informed, T, k)
        return (math.log(back) if back > 0 else -math.inf) - math.log(fwd)

    S = len(X)
    P = torch.zeros(S, S, dtype=torch.float64)
    for s, x in enumerate(states):
        for order in itertools.permutations(sites, k):
            choices = [allowed[j].nonzero(as_tuple=True)[0].tolist() for j in order]
            for residues in itertools.product(*choices):
                y = list(x)
                for j, a in zip(order, residues):
                    y[j] = a
                if informed and any(a == x[j] for j, a in zip(order, residues)):
                    continue
                q = _path_prob(x, rows, s, order, y, allowed, sites, informed, T, k)
                q = q / (n_orders if not informed else 1)
                t = index.get(tuple(y))
                if q == 0 or t is None or t == s:
                    continue
                # the reverse move reads the rows of y; one plain site of masked rows: x's own row (the same input)
                rev_rows = s if (k == 1 and not informed and (x_rows_back or not unmasked)) else t
                back = _path_prob(y, rows, rev_rows, order, x, allowed, sites, informed, T, k)
                fwd = q * (n_orders if not informed else 1)
                la = -(float(U[t]) - float(U[s])) / TAU
                if hastings:
                    la += (math.log(back) if back > 0 else -math.inf) - math.log(fwd)
                a1 = 1.0
                if delayed:
                    e1 = est(s, t, order, s)
                    a1 = min(1.0, math.exp(e1))
                    if second:
                        la += min(0.0, est(t, s, order, t)) - min(0.0, e1)
                P[s, t] += q * a1 * min(1.0, math.exp(la))
    P[range(S), range(S)] = 1 - P.sum(1)
    return P


CASES = [  # (proposal, sites, informed, delayed, proposal temperature)
    (0, 2, False, False, 1.0),
    (1, 3, False, False, 0.7),
    (0, 1, True, False, 1.0),
    (1, 2, True, False, 1.5),
    (None, 2, True, False, 1.0),
    (0, 1, False, True, 1.0),
    (0, 2, True, True, 1.0),
    (1, 2, False, True, 2.0),
]


@pytest.mark.parametrize("proposal,k,informed,delayed,T", CASES)
def test_each_move_leaves_the_constrained_target_invariant(toy, proposal, k, informed, delayed, T):
    target, X, pi = toy
    P = transition_matrix(target, X, proposal, k, informed, delayed, T)
    assert (P >= -1e-15).all() and torch.allclose(P.sum(1), torch.ones(len(X), dtype=torch.float64))
    assert (pi @ P - pi).abs().max() < 1e-12
    flow = pi[:, None] * P
    assert (flow - flow.T).abs().max() < 1e-12  # detailed balance
    assert (stationary(P) - pi).abs().max() < 1e-9
    if proposal is not None:  # without the Hastings correction the law is biased (uniform moves: symmetric)
        wrong = stationary(transition_matrix(target, X, proposal, k, informed, delayed, T, hastings=False))
        assert 0.5 * (wrong - pi).abs().sum() > 0.01
    if delayed:  # without the second stage's correction the first stage biases it
        wrong = stationary(transition_matrix(target, X, proposal, k, informed, delayed, T, second=False))
        assert 0.5 * (wrong - pi).abs().sum() > 0.005


@pytest.fixture(scope="module")
def toy_mm():
    target, spec = toy_target(temperature=TAU, first_kind="mutant_marginal")
    X = enumerate_space(target)
    return target, X, exact_law(target, X, TAU)


@pytest.mark.parametrize("k,informed,delayed", [(1, False, False), (2, False, False), (2, True, True)])
def test_moves_on_a_one_row_expert_leave_its_target_invariant(toy_mm, k, informed, delayed):
    """A mutant-marginal expert proposes from its unmasked rows, which change with the proposed residue itself: the
    reverse move must read the rows of x' even for one site (reading x's row there is caught: not stationary)."""
    target, X, pi = toy_mm
    P = transition_matrix(target, X, 0, k, informed, delayed)
    assert (pi @ P - pi).abs().max() < 1e-12
    assert (stationary(P) - pi).abs().max() < 1e-9
    wrong = stationary(transition_matrix(target, X, 0, k, informed, delayed, hastings=False))
    assert 0.5 * (wrong - pi).abs().sum() > 0.01
    if (k, informed) == (1, False):
        shortcut = stationary(transition_matrix(target, X, 0, k, informed, delayed, x_rows_back=True))
        assert 0.5 * (shortcut - pi).abs().sum() > 0.01
        sampled = _run_from_target(target, X, pi, mh_kernel(target, 0, 1.0, k, informed, delayed), 6000, 3, seed=5)
        assert 0.5 * float((sampled - pi).abs().sum()) < tv_tolerance(6000, len(X), 0.0)


def test_the_mutant_marginal_is_evoprotgrads_score_from_one_unmasked_row(toy_mm):
    """``E = -Σ_i log p_i(x_i | x) - log p_i(parent_i | x)`` from one forward of ``x`` through the model, computed
    here from the model's own logits; one row per sequence."""
    target, X, _ = toy_mm
    reader = target.experts[0]
    before = target.model_rows
    E, rows = target.energies(X[:5], rows_of=0)
    assert target.model_rows - before == 5 + 5 * X.shape[1]  # the first expert 1 row each; the other L each
    for n, x in enumerate(X[:5].tolist()):
        ids = reader.template.clone()
        ids[reader.cols] = reader.letter_ids[torch.tensor(x)]
        lp = reader.reader.logits(ids[None])[0].double().log_softmax(-1)[reader.cols]
        want = -sum(
            float(lp[i, reader.letter_ids[a]] - lp[i, reader.letter_ids[p]])
            for i, (a, p) in enumerate(zip(x, target.parent_ids.tolist()))
        )
        assert abs(float(E[n, 0]) - want) < 1e-5
    E_parent, _ = target.energies(target.parent_ids[None])
    assert float(E_parent[0, 0]) == 0.0  # the parent scores 0


def _run_from_target(target, X, pi, kernel, n, steps, seed):
    g = torch.Generator().manual_seed(seed)
    start = X[torch.multinomial(pi, n, replacement=True, generator=g)]
    state = kernel.init(start, torch.tensor(TAU, dtype=torch.float64))
    for _ in range(steps):
        state, _ = kernel.step(state, g)
    index = {tuple(x): s for s, x in enumerate(X.tolist())}
    counts = torch.zeros(len(X), dtype=torch.float64)
    for x in state.X.tolist():
        counts[index[tuple(x)]] += 1
    return counts / n


@pytest.mark.parametrize("proposal,k,informed,delayed,T", [CASES[1], CASES[3], CASES[6]])
def test_the_kernel_runs_the_matrix_and_keeps_the_target(toy, proposal, k, informed, delayed, T):
    """Chains started at exact draws of the target stay at it: the kernel, not only the matrix, is exact."""
    target, X, pi = toy
    n, steps = 6000, 3
    kernel = mh_kernel(target, proposal, T, k, informed, delayed)
    sampled = _run_from_target(target, X, pi, kernel, n, steps, seed=11)
    assert 0.5 * float((sampled - pi).abs().sum()) < tv_tolerance(n, len(X), 0.0)


def test_a_kernel_without_the_hastings_correction_is_caught(toy, monkeypatch):
    """The same run with the proposal terms dropped from the acceptance ratio ends off the target by more than the
    tolerance: the test above has power."""
    target, X, pi = toy
    from mlmprob.mcmc import engine

    n, steps = 12000, 6
    P = transition_matrix(target, X, 1, 2, True, False, 1.5, hastings=False)
    drift = 0.5 * float((pi @ torch.linalg.matrix_power(P, steps) - pi).abs().sum())
    assert drift > 2 * tv_tolerance(n, len(X), 0.0)  # the wrong kernel's exact law is far enough to be seen
    monkeypatch.setattr(engine, "log_acceptance", lambda u_old, u_new, tau, rev, fwd: -(u_new - u_old) / tau)
    kernel = mh_kernel(target, 1, 1.5, 2, True, False)
    sampled = _run_from_target(target, X, pi, kernel, n, steps, seed=11)
    assert 0.5 * float((sampled - pi).abs().sum()) > tv_tolerance(n, len(X), 0.0)
