"""Long runs of the design kernels on the trained target of ``test_design_truth.py`` (two tiny BERTs trained on
ground-truth languages, a callable term, Hamming, hard constraints): the samples of many independent chains are
compared with the brute-force constrained target and with the exact law of the finite run (the run's matrices
multiplied out from the parent), within a TV tolerance derived from the sample size (``exact_chains.tv_tolerance``:
the mean of the empirical TV bounded by Jensen, its spread by McDiarmid at level 1e-6, plus the run's exact
bias). The chains read the experts' energies from tables computed once through the models; a run through the
models makes the same moves (``test_design_truth.py``).
"""

import pytest
import torch
import trained_toys as toys
from exact_chains import (
    empirical,
    matrix_at,
    point_law,
    run_law,
    stationary,
    swap_acceptance,
    swap_apply,
    tv,
    tv_tolerance,
)
from trained_toys import moves, truth_tables

from mlmprob.designing.api import run_design

TAU = 1.0
LADDER = (TAU, 1.8)


@pytest.fixture(scope="module")
def truth():
    return truth_tables(TAU)


def law(truth, tau=TAU):
    return toys.law(truth, tau)


def from_parent(truth) -> torch.Tensor:
    return point_law(truth["target"], truth["X"], truth["target"].parent)


@pytest.mark.parametrize(
    "method,extra,n,steps",
    [
        ("mh", {"proposal": "hmm"}, 3000, 120),
        ("mh", {"proposal": "uniform"}, 2000, 100),
        ("anneal", {"proposal": "potts", "anneal_start": TAU, "anneal_end": TAU}, 2000, 150),  # a fixed temperature
    ],
)
def test_long_run_samples_match_the_target(truth, method, extra, n, steps):
    target, X, S = truth["tab"], truth["X"], len(truth["X"])
    spec = truth["spec"].replace(method=method, chains=n, steps=steps, **extra)
    proposal = None if spec.proposal == "uniform" else target.expert_index(spec.proposal)
    P = matrix_at(moves(truth, proposal), TAU, S)
    finite = run_law(from_parent(truth), lambda t: P, steps)  # the chains' exact law after the run
    pi = law(truth)
    bias = tv(finite, pi)
    r = run_design(target, spec, torch.Generator().manual_seed(steps))
    sampled = empirical(target, X, r.samples())
    tol = tv_tolerance(n, pi, bias)
    assert bias < 0.06 and tv(sampled, pi) < tol, (tv(sampled, pi), tol, bias)
    assert tv(sampled, finite) < tv_tolerance(n, finite)  # as close to the finite run's law as n draws allow
    if proposal is not None and method == "mh":
        # the test has power: n draws from the kernel without its Hastings correction (its law ``wrong``) would lie
        # farther than ``tol`` from the target whenever they lie within their own tolerance of ``wrong``
        wrong = stationary(matrix_at(moves(truth, proposal, hastings=False), TAU, S))
        assert tv(wrong, pi) > tol + tv_tolerance(n, wrong), (tv(wrong, pi), tol)


def test_annealing_samples_follow_the_exact_law_of_their_schedule(truth):
    target, X, S = truth["tab"], truth["X"], len(truth["X"])
    spec = truth["spec"].replace(method="anneal", chains=2000, steps=60, anneal_start=5.0, anneal_end=0.5)
    m = moves(truth, 0)
    finite = run_law(from_parent(truth), lambda t: matrix_at(m, spec.temperature_at(t), S), spec.steps)
    r = run_design(target, spec, torch.Generator().manual_seed(8))
    sampled = empirical(target, X, r.samples())
    assert tv(sampled, finite) < tv_tolerance(spec.chains, finite), tv(sampled, finite)
    # cooling concentrates the chains: their law is nearer the cold target than the start's temperature's
    assert tv(finite, law(truth, 0.5)) < tv(finite, law(truth, 5.0))


def test_replica_exchange_coldest_rung_samples_the_target(truth):
    target, X, S, U = truth["tab"], truth["X"], len(truth["X"]), truth["U"]
    n, steps, taus = 2000, 100, LADDER
    spec = truth["spec"].replace(method="replica", temperature=1.0, temperatures=taus, chains=n, steps=steps)
    r = run_design(target, spec, torch.Generator().manual_seed(4))
    m = moves(truth, 0)
    P1, P2 = matrix_at(m, taus[0], S), matrix_at(m, taus[1], S)
    accept = swap_acceptance(U, *taus)
    p = from_parent(truth)
    joint = torch.outer(p, p)  # the exact law of (cold, hot): both rungs step, then every second step they swap
    for t in range(steps):
        joint = P1.T @ joint @ P2
        joint = swap_apply(joint, accept) if (t + 1) % 2 == 0 else joint
    cold, pi = joint.sum(1), law(truth)
    bias = tv(cold, pi)
    sampled = empirical(target, X, r.samples())
    assert bias < 0.05 and tv(sampled, pi) < tv_tolerance(n, pi, bias), (tv(sampled, pi), bias)
    assert tv(sampled, cold) < tv_tolerance(n, cold)
    rungs = r.stats["temperatures"]
    assert 0 < rungs[0]["swap_rate"] <= 1 and 0 < rungs[0]["acceptance"] < 1
