"""The design kernels measured against the truth (issue 38, part 3): two tiny BERTs trained on ground-truth languages
(``trained_toys.py``, weights from ``make_trained_experts.py``), a callable term, Hamming and hard constraints, on a
space of a few hundred sequences enumerated by brute force. Long runs: ``test_design_truth_runs.py``.

- the experts learnt their languages, and their conditionals are those of no joint: the ratios that single-site
  (Gibbs, PLL-style) moves read are path-dependent, so a proposal from either is not the target's own Gibbs move
  and only the Hastings correction makes the chain exact;
- MH (each expert's proposal, uniform, tempered proposals) and annealing at every temperature of its schedule: the
  exact transition matrix (``exact_chains.py``, from the kernel's own proposal and acceptance functions) has the
  brute-force constrained target as its unique stationary law, with detailed balance; the kernel's own step draws
  by that matrix; a run through the models makes the same moves as a run on the brute-force tables;
- replica exchange: the swap rule preserves the joint law of the rungs exactly, and the implemented swap step
  accepts by that rule.
"""

import pytest
import torch
import trained_toys as toys
from exact_chains import empirical, matrix_at, stationary, swap_acceptance, swap_apply, tv, tv_tolerance
from trained_toys import TERMS, moves, truth_tables

from mlmprob.designing.api import run_design
from mlmprob.designing.kernels import mh_kernel, swap_log_acceptance, swap_step

TAU = 1.0
LADDER = (TAU, 1.8, 3.2)


@pytest.fixture(scope="module")
def truth():
    return truth_tables(TAU)


def law(truth, tau=TAU):
    return toys.law(truth, tau)


def test_the_space_and_the_experts_make_a_real_test(truth):
    from make_trained_experts import languages

    target, X, E = truth["target"], truth["X"], truth["E"]
    assert target.names == TERMS and target.alphabet == "ACDEGK"
    assert 100 <= len(X) <= 2000  # enumerable, and the constraints cut the allowed product
    assert len(X) < int(target.allowed.sum(1).prod())
    assert all(target.constraints.ok(s) for s in target.decode(X))
    assert torch.corrcoef(E[:, :2].T)[0, 1].abs() < 0.5  # two different experts, not one twice
    # each expert learnt its language: its pseudo-log-likelihood follows the language's exact log-probability
    seqs = target.decode(X)
    for k, name in enumerate(("hmm", "potts")):
        lang, letters, _ = languages()[name]
        truth_lp = lang.log_prob(torch.tensor([[letters.index(c) for c in s] for s in seqs]))
        assert torch.corrcoef(torch.stack([-E[:, k], truth_lp]))[0, 1] > 0.8, name


def test_the_committed_weights_carry_the_scripts_recipe():
    """The weights in ``data/`` were made by ``make_trained_experts.py`` as it stands: the language, the letters and
    the training config in each file are the script's (``make_trained_experts.py --check`` retrains, ~20 s)."""
    import json

    from make_trained_experts import LENGTH, TRAIN, languages
    from safetensors import safe_open
    from trained_toys import DATA

    from mlmprob.training import TrainConfig

    for name, (lang, letters, seed) in languages().items():
        with safe_open(str(DATA / f"{name}.safetensors"), "pt") as f:
            meta = f.metadata()
        assert json.loads(meta["language"]) == lang.spec() and lang.length == LENGTH
        assert (
            meta["letters"] == letters and json.loads(meta["train_config"]) == TrainConfig(seed=seed, **TRAIN).to_dict()
        )


def path_gap(target, proposal: int, generator: torch.Generator, n: int = 64) -> torch.Tensor:
    """``|log r(x -> y via i then j) - log r(x -> y via j then i)|`` for ``n`` random ``x`` and two-site changes
    ``y`` (any sequence over the alphabet), where ``r`` multiplies the expert's single-site conditional ratios.
    Conditionals of one joint give the same ratio by both paths (Brook's lemma): a gap shows none has them."""
    L, A = target.allowed.shape
    x = torch.randint(A, (n, L), generator=generator)
    ij = torch.stack([torch.randperm(L, generator=generator)[:2].sort().values for _ in range(n)])
    i, j = ij[:, 0], ij[:, 1]
    b = torch.arange(n)
    a_i = (x[b, i] + torch.randint(1, A, (n,), generator=generator)) % A
    a_j = (x[b, j] + torch.randint(1, A, (n,), generator=generator)) % A
    xi, xj = x.clone(), x.clone()
    xi[b, i], xj[b, j] = a_i, a_j
    _, rows = target.energies(torch.cat([x, xi, xj]), rows_of=proposal)
    r, ri, rj = rows[:n], rows[n : 2 * n], rows[2 * n :]

    def step(rows, site, new, old):
        return rows[b, site, new] - rows[b, site, old]  # the row's normaliser cancels

    first_i = step(r, i, a_i, x[b, i]) + step(ri, j, a_j, x[b, j])
    first_j = step(r, j, a_j, x[b, j]) + step(rj, i, a_i, x[b, i])
    return (first_i - first_j).abs()


@pytest.mark.parametrize("proposal", [0, 1])
def test_the_trained_experts_conditionals_are_incompatible(truth, proposal):
    gap = path_gap(truth["target"], proposal, torch.Generator().manual_seed(proposal))
    assert float(gap.max()) > 0.3 and float(gap.median()) > 0.02, (gap.max(), gap.median())


@pytest.mark.parametrize("proposal,proposal_temperature", [(0, 1.0), (1, 1.0), (None, 1.0), (0, 0.6), (1, 1.8)])
def test_the_exact_stationary_law_of_the_mh_kernel_is_the_constrained_target(truth, proposal, proposal_temperature):
    pi, S = law(truth), len(truth["X"])
    P = matrix_at(moves(truth, proposal, proposal_temperature=proposal_temperature), TAU, S)
    assert (P >= 0).all() and (P.sum(1) - 1).abs().max() < 1e-12
    assert (pi @ P - pi).abs().max() < 1e-12
    flow = pi[:, None] * P
    assert (flow - flow.T).abs().max() < 1e-12  # detailed balance
    second = torch.linalg.eigvals(P).abs().sort(descending=True).values[1]
    assert second < 1 - 1e-4  # irreducible and aperiodic: the stationary law is unique
    assert (stationary(P) - pi).abs().max() < 1e-6
    if proposal is not None:  # without the Hastings correction the expert's proposal biases the chain
        wrong = stationary(matrix_at(moves(truth, proposal, hastings=False), TAU, S))
        assert tv(wrong, pi) > 0.1


def test_annealing_leaves_each_temperature_of_its_schedule_invariant(truth):
    spec = truth["spec"].replace(method="anneal", steps=12, anneal_start=6.0, anneal_end=0.4)
    m, S = moves(truth, 0), len(truth["X"])
    for t in range(spec.steps):
        tau = spec.temperature_at(t)
        P, pi = matrix_at(m, tau, S), law(truth, tau)
        assert (pi @ P - pi).abs().max() < 1e-12, tau
        flow = pi[:, None] * P
        assert (flow - flow.T).abs().max() < 1e-12, tau


@pytest.mark.parametrize("proposal,tau", [(0, TAU), (1, 3.0), (None, 0.5)])
def test_one_step_of_the_kernel_draws_by_its_exact_matrix(truth, proposal, tau):
    target, X, n = truth["tab"], truth["X"], 3000
    P = matrix_at(moves(truth, proposal), tau, len(X))
    kernel = mh_kernel(target, proposal)
    starts = [target.decode(X).index(target.parent), int(law(truth).argmax()), len(X) // 2]
    state = kernel.init(X[starts].repeat_interleave(n, 0), torch.tensor(tau, dtype=torch.float64))
    state, _ = kernel.step(state, torch.Generator().manual_seed(11))
    seqs = target.decode(state.X)
    for k, s in enumerate(starts):
        got = empirical(target, X, seqs[k * n : (k + 1) * n])
        assert tv(got, P[s]) < tv_tolerance(n, P[s]), (k, tv(got, P[s]))


@pytest.mark.parametrize(
    "method,extra",
    [("mh", {"proposal": "hmm"}), ("replica", {"temperatures": LADDER, "temperature": 1.0, "proposal": "potts"})],
)
def test_runs_through_the_models_are_the_runs_on_the_tables(truth, method, extra):
    """The kernels draw the same numbers whatever the states, so a run that calls the trained models and one that
    reads their energies from the tables (as the long runs of ``test_design_truth_runs.py`` do) make the same moves."""
    spec = truth["spec"].replace(method=method, chains=100, steps=30, **extra)
    runs = [run_design(truth[t], spec, torch.Generator().manual_seed(1)) for t in ("target", "tab")]
    assert [r["sequence"] for r in runs[0].rows] == [r["sequence"] for r in runs[1].rows]
    assert len({r["sequence"] for r in runs[0].rows}) > 10 and runs[0].stats["model_rows"] > 0
    for a, b in zip(runs[0].rows, runs[1].rows, strict=True):
        assert abs(a["total"] - b["total"]) < 1e-6 and a["acceptance"] == b["acceptance"]


def test_the_swap_rule_preserves_the_joint_law_of_the_rungs(truth):
    """The product law of the ladder is invariant under each swap move: a move between rungs ``r`` and ``r + 1``
    touches only their two coordinates, and the others factor out of the joint, so checking each adjacent pair's
    ``[S, S]`` law checks the whole ``[S] * R`` joint."""
    U = truth["U"]
    for cold, hot in zip(LADDER, LADDER[1:], strict=False):
        joint = torch.outer(law(truth, cold), law(truth, hot))
        moved = swap_apply(joint, swap_acceptance(U, cold, hot))
        assert float((moved - joint).abs().max()) < 1e-15 and abs(float(moved.sum()) - 1) < 1e-12
        wrong = swap_apply(joint, swap_acceptance(U, hot, cold))  # the temperatures' roles swapped: it moves
        assert tv(wrong.reshape(-1), joint.reshape(-1)) > 1e-2
        # a whole replica-exchange step (each rung's MH kernel, then the swap) leaves the product law invariant
        m = moves(truth, 0)
        stepped = matrix_at(m, cold, len(U)).T @ joint @ matrix_at(m, hot, len(U))
        assert float((swap_apply(stepped, swap_acceptance(U, cold, hot)) - joint).abs().max()) < 1e-12


@pytest.mark.parametrize("parity", [0, 1])
def test_the_swap_step_accepts_by_the_exact_rule(truth, parity):
    target, X, C = truth["target"], truth["X"], 200
    kernel = mh_kernel(target, 0)
    g = torch.Generator().manual_seed(parity)
    pick = torch.randint(len(X), (len(LADDER) * C,), generator=g)
    taus = torch.tensor(LADDER, dtype=torch.float64).repeat_interleave(C)
    state = kernel.init(X[pick], taus)
    u = torch.rand(len(LADDER) - 1, C, generator=torch.Generator().manual_seed(99), dtype=torch.float64)
    new, tried, took = swap_step(state, len(LADDER), parity, torch.Generator().manual_seed(99))
    assert torch.equal(new.tau, state.tau)  # the states move, the temperatures stay
    want = state.X.clone()
    for r in range(len(LADDER) - 1):
        a, h = torch.arange(C) + r * C, torch.arange(C) + (r + 1) * C
        swap = (r % 2 == parity) & (u[r].log() < swap_log_acceptance(state.U[a], state.U[h], LADDER[r], LADDER[r + 1]))
        want[a[swap]], want[h[swap]] = state.X[h[swap]], state.X[a[swap]]
        assert int(took[r]) == int(swap.sum()) and int(tried[r]) == (C if r % 2 == parity else 0)
    assert torch.equal(new.X, want) and int(took.sum()) > 0
    assert torch.allclose(new.U, target.total(target.energies(new.X)[0]), rtol=0, atol=1e-6)  # energies travel too


@pytest.mark.parametrize("steps", [2, 9])
def test_each_chains_best_is_no_worse_than_any_state_it_held(truth, steps):
    """A chain's best sequence is the best state in ``C`` it held, swapped in by replica exchange included (a swap
    at the last step, or one followed by a move away, used to be missed: best_total above the final total)."""
    tab, C = truth["tab"], 100
    spec = truth["spec"].replace(method="replica", temperature=1.0, temperatures=LADDER, chains=C, steps=steps)
    held = []
    r = run_design(tab, spec, torch.Generator().manual_seed(0), lambda t, s, i: held.append(s))
    lowest = torch.stack([torch.where(s.inside, s.U, torch.inf) for s in held]).min(0).values
    for b, row in enumerate(r.rows):
        assert row["best_total"] is not None and row["best_total"] <= float(lowest[b]) + 1e-12, (b, row)
        best = tab.encode([row["best_sequence"]])
        assert abs(float(tab.total(tab.energies(best)[0])[0]) - row["best_total"]) < 1e-9
