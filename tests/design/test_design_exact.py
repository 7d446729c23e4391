"""Exactness of the design kernels on an enumerable toy: two tiny BERTs with incompatible conditionals (each
through its own tokenizer), a callable term, Hamming and hard constraints.

- the MH kernel's exact transition matrix (built from the kernel's own proposal and acceptance functions) has the
  brute-force constrained target as its stationary law, and satisfies detailed balance; dropping the Hastings
  correction breaks it (the test has power);
- the kernel itself, run on many chains, gives samples whose TV to the target is within a tolerance derived from
  the sample size and the exact bias of the finite run;
- replica exchange's swap rule preserves the joint law of the rungs exactly, and its coldest rung samples the target;
- no state of any chain of any method ever leaves ``C``.
"""

import math

import pytest
import torch
from design_toys import enumerate_space, exact_law, toy_target

from mlmprob.design.api import run_design
from mlmprob.design.kernels import changeable_sites, log_acceptance, site_log_probs, swap_log_acceptance

TAU = 1.3


@pytest.fixture(scope="module")
def toy():
    target, spec = toy_target(temperature=TAU)
    X = enumerate_space(target)
    pi = exact_law(target, X, TAU)
    return target, spec, X, pi


def transition_matrix(target, X, proposal: int | None, tau: float, hastings: bool = True) -> torch.Tensor:
    """The random-scan MH kernel's exact transition matrix on the enumerated space ``X`` (float64)."""
    S = len(X)
    E, rows = target.energies(X, rows_of=proposal)
    U = target.total(E)
    index = {tuple(x): s for s, x in enumerate(X.tolist())}
    sites = changeable_sites(target.allowed).tolist()
    P = torch.zeros(S, S, dtype=torch.float64)
    for s, x in enumerate(X.tolist()):
        for i in sites:
            allowed = target.allowed[i][None]
            logq = site_log_probs(None if rows is None else rows[s, i][None], allowed)[0]
            for a in allowed[0].nonzero(as_tuple=True)[0].tolist():
                y = list(x)
                y[i] = a
                t = index.get(tuple(y))
                if a == x[i] or t is None:  # no move, or a move out of C: rejected
                    continue
                rev = logq[x[i]] if hastings else logq[a]
                la = log_acceptance(U[s], U[t], torch.tensor(tau, dtype=torch.float64), rev, logq[a])
                P[s, t] += logq[a].exp() * min(1.0, float(la.exp())) / len(sites)
    P[range(S), range(S)] = 1 - P.sum(1)
    return P


def stationary(P: torch.Tensor) -> torch.Tensor:
    w, v = torch.linalg.eig(P.T)
    k = int((w - 1).abs().argmin())
    p = v[:, k].real
    return p / p.sum()


def test_the_toy_is_a_real_test(toy):
    target, _, X, pi = toy
    assert 8 <= len(X) < 48  # the constraints cut the allowed product (48) but leave a real space
    assert len(target.experts) == 2 and target.names == ("first", "other", "oracle", "hamming")
    assert all(target.constraints.ok(s) for s in target.decode(X))
    # the two experts disagree (incompatible products, not one model twice)
    E, _ = target.energies(X)
    assert torch.corrcoef(E[:, :2].T)[0, 1] < 0.99


@pytest.mark.parametrize("proposal", [0, 1, None])
def test_exact_transition_matrix_has_the_constrained_target_as_its_stationary_law(toy, proposal):
    target, _, X, pi = toy
    P = transition_matrix(target, X, proposal, TAU)
    assert torch.allclose(P.sum(1), torch.ones(len(X), dtype=torch.float64))
    assert (pi @ P - pi).abs().max() < 1e-12
    flow = pi[:, None] * P
    assert (flow - flow.T).abs().max() < 1e-12  # detailed balance
    assert (stationary(P) - pi).abs().max() < 1e-9
    if proposal is not None:  # without the Hastings correction the expert's proposal biases the chain
        wrong = stationary(transition_matrix(target, X, proposal, TAU, hastings=False))
        assert 0.5 * (wrong - pi).abs().sum() > 0.01


def tv_tolerance(n: int, states: int, bias: float) -> float:
    """E[TV] <= 0.5 sqrt((S - 1) / n) for n independent draws; TV moves by at most 1/n per draw, so it exceeds its
    mean by t with probability at most exp(-2 n t^2) (McDiarmid): t for 1e-6; plus the run's exact bias."""
    return 0.5 * math.sqrt((states - 1) / n) + math.sqrt(math.log(1e6) / (2 * n)) + bias


def empirical(target, X, seqs) -> torch.Tensor:
    index = {s: k for k, s in enumerate(target.decode(X))}
    counts = torch.zeros(len(X), dtype=torch.float64)
    for s in seqs:
        counts[index[s]] += 1
    return counts / counts.sum()


def point_law(target, X, seq: str) -> torch.Tensor:
    law = torch.zeros(len(X), dtype=torch.float64)
    law[target.decode(X).index(seq)] = 1
    return law


def test_long_run_samples_of_the_kernel_match_the_target(toy):
    target, spec, X, pi = toy
    steps, n = 60, 1500
    P = transition_matrix(target, X, 0, TAU)
    law = point_law(target, X, target.parent) @ torch.linalg.matrix_power(P, steps)  # the chains' exact law
    bias = 0.5 * float((law - pi).abs().sum())
    r = run_design(target, spec.replace(chains=n, steps=steps), torch.Generator().manual_seed(7))
    sampled = empirical(target, X, r.samples())
    tv = 0.5 * float((sampled - pi).abs().sum())
    tol = tv_tolerance(n, len(X), bias)
    assert bias < 0.05 and tv < tol, (tv, tol, bias)
    # the samples are as close to the exact law of the finite run as n draws allow
    assert 0.5 * float((sampled - law).abs().sum()) < tv_tolerance(n, len(X), 0.0)
    assert r.stats["model_rows"] > 0 and r.stats["oracle_calls"] > 0


def test_replica_exchange_swap_rule_preserves_the_joint_law(toy):
    target, _, X, _ = toy
    taus = (1.0, 2.5)
    E, _ = target.energies(X)
    U = target.total(E)
    p1, p2 = torch.softmax(-U / taus[0], 0), torch.softmax(-U / taus[1], 0)
    joint = p1[:, None] * p2[None, :]  # [x at the cold rung, y at the hot one]
    S = len(X)
    moved = (joint.reshape(-1) @ swap_matrix(U, taus)).view(S, S)  # the swap kernel applied to the joint law
    assert (moved - joint).abs().max() < 1e-15
    # a wrong rule (the temperatures' roles swapped) moves it
    wrong = swap_matrix(U, taus[::-1])
    assert (joint.reshape(-1) @ wrong - joint.reshape(-1)).abs().max() > 1e-3


def swap_matrix(U: torch.Tensor, taus) -> torch.Tensor:
    """The swap move's exact transition matrix on pairs ``(x, y)`` (index ``x * S + y``)."""
    S = len(U)
    M = torch.zeros(S * S, S * S, dtype=torch.float64)
    for x in range(S):
        for y in range(S):
            a = min(1.0, float(swap_log_acceptance(U[x], U[y], taus[0], taus[1]).exp()))
            M[x * S + y, y * S + x] += a
            M[x * S + y, x * S + y] += 1 - a
    return M


def test_replica_exchange_coldest_rung_samples_the_target(toy):
    target, spec, X, pi = toy
    n, steps, taus = 800, 40, (TAU, 3.0)
    r = run_design(
        target,
        spec.replace(method="replica", temperature=1.0, temperatures=taus, chains=n, steps=steps),
        torch.Generator().manual_seed(3),
    )
    # the exact law of the finite run: both rungs step, then (every second step) the pair swaps
    K = torch.kron(transition_matrix(target, X, 0, taus[0]), transition_matrix(target, X, 0, taus[1]))
    E, _ = target.energies(X)
    Sw = swap_matrix(target.total(E), taus)
    law = torch.kron(point_law(target, X, target.parent), point_law(target, X, target.parent))
    for t in range(steps):
        law = law @ K
        law = law @ Sw if (t + 1) % 2 == 0 else law
    cold = law.view(len(X), len(X)).sum(1)
    bias = 0.5 * float((cold - pi).abs().sum())
    sampled = empirical(target, X, r.samples())
    tv = 0.5 * float((sampled - pi).abs().sum())
    assert bias < 0.1 and tv < tv_tolerance(n, len(X), bias), (tv, bias)
    assert 0.5 * float((sampled - cold).abs().sum()) < tv_tolerance(n, len(X), 0.0)
    rungs = r.stats["temperatures"]
    assert [t["temperature"] for t in rungs] == list(taus)
    assert 0 < rungs[0]["swap_rate"] <= 1 and 0 < rungs[0]["acceptance"] < 1 and "swap_rate" not in rungs[1]


@pytest.mark.parametrize(
    "method,extra",
    [("mh", {}), ("anneal", {"anneal_start": 5.0, "anneal_end": 0.2}), ("replica", {"temperatures": (1.0, 4.0)})],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_no_state_ever_leaves_the_constraints(method, extra, seed):
    target, spec = toy_target(method=method, chains=40, steps=15, proposal="other", **extra)
    seen = []

    def check(t, state, info):
        seqs = target.decode(state.X)
        assert all(target.constraints.ok(s) for s in seqs)
        assert bool(state.inside.all())
        seen.append(int(info.left.sum()))

    r = run_design(target, spec, torch.Generator().manual_seed(seed), check)
    assert len(seen) == spec.steps and sum(seen) > 0  # moves out of C were proposed, and refused
    for row in r.rows:
        assert target.constraints.ok(row["sequence"]) and row["mutations"] <= 2
        assert row["best_sequence"] is None or target.constraints.ok(row["best_sequence"])
