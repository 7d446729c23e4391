"""Exactness of ``sample(method="mh")``'s moves (``informed``, ``sites``; :mod:`mlmprob.mcmc.moves`) on tiny
``ExactMLM`` models with incompatible random conditionals (V 3, T 3: 27 states):

- each move has an exact transition matrix, built here by brute force over every move (every ordered choice of
  sites and every residue) from the model's logits alone, independently of the package's code, whose stationary law
  is the target ``exp(-E/tau)``; without the Hastings correction it is not (the test has power);
- the kernel itself runs that matrix (chains started at one state follow its rows for a few steps) and, started at
  exact draws of the target, stays there (also with per-chain free positions fewer than ``sites``), within a
  tolerance from the sample size; the same run with the reverse probability dropped is caught;
- the options the moves are not exact with are refused in one line, by the API and by the command line.
"""

import itertools
import math

import pytest
import torch
from mh_reference import energies as ref_energies
from sampling_fixtures import exact, gen

from mlmprob.cli import main
from mlmprob.errors import MLMProbError
from mlmprob.models.exact import all_sequences
from mlmprob.sampling import MetropolisHastings, ProposalConfig, sample
from mlmprob.sampling.spec import SamplerSpec

pytestmark = pytest.mark.usefixtures("one_thread")
DELTA = 1e-6

CASES = {  # name: (model seed, sampler options)
    "informed k=1": (1, {"informed": True}),
    "informed k=2, raw, tempered": (
        2,
        {"informed": True, "sites": 2, "energy": "raw", "target_temperature": 0.8, "proposal_temperature": 1.5},
    ),
    "plain k=2": (3, {"sites": 2}),
    "plain k=3, tempered": (4, {"sites": 3, "proposal_temperature": 0.7, "target_temperature": 1.3}),
    "delayed, informed k=2": (2, {"informed": True, "sites": 2, "delayed": True}),
    "delayed, plain k=2, raw, tempered": (
        3,
        {"sites": 2, "delayed": True, "energy": "raw", "target_temperature": 2.0, "proposal_temperature": 1.3},
    ),
}


def kernel_of(m, kw) -> MetropolisHastings:
    """The kernel ``sample(method="mh", **kw)`` steps (the spec's factory)."""
    return SamplerSpec(method="mh", **kw).kernel(m)


def site_rows(m, X) -> torch.Tensor:
    """``[K, T, V]``: the logits at ``j`` of each state with ``j`` masked (the rows a move reads)."""
    out = torch.zeros(*X.shape, m.vocab_size, dtype=torch.float64)
    for j in range(X.shape[1]):
        Y = X.clone()
        Y[:, j] = m.mask_id
        out[:, j] = m.logits(Y).double()[:, j]
    return out


def path_prob(x, R, order, y, informed, T) -> float:
    """The probability that a move from ``x`` (rows ``R`` ``[T, V]``) visits the sites ``order`` in that order and
    puts ``y``'s residues there; for plain moves without the uniform choice of the sites (the same both ways)."""
    if not informed:
        p = 1.0
        for j in order:
            p *= float(torch.softmax(R[j] / T, -1)[y[j]])
        return p
    used, p = set(), 1.0
    for j in order:
        w = {
            (i, a): math.exp(0.5 * float(R[i, a] - R[i, x[i]]) / T)
            for i in range(len(x))
            if i not in used
            for a in range(R.shape[1])
            if a != x[i]
        }
        p *= w.get((j, y[j]), 0.0) / sum(w.values())
        used.add(j)
    return p


def first_stage(x, y, order, R, informed, T, tau) -> float:
    """Delayed acceptance's first-stage log ratio of the move ``x -> y`` read from ``x``'s rows ``R`` alone: the
    energy's change estimated by the logits at the changed sites, the reverse move's probability from ``x``'s rows."""
    own = sum(float(R[j, y[j]] - R[j, x[j]]) for j in order)
    back = path_prob(y, R, order, x, informed, T)
    return own / tau + (math.log(back) if back > 0 else -math.inf) - math.log(path_prob(x, R, order, y, informed, T))


def transition_matrix(m, kw, hastings=True, second=True) -> torch.Tensor:
    """One move's exact transition matrix over all states, by brute force (``second``: delayed acceptance's second
    stage corrects by the first stage's ratios)."""
    X = all_sequences(m.vocab_size, m.length)
    E = ref_energies(m, X, kw.get("energy", "local"))
    tau, T = kw.get("target_temperature", 1.0), kw.get("proposal_temperature", 1.0)
    k, informed = min(kw.get("sites", 1), m.length), kw.get("informed", False)
    R = site_rows(m, X)
    states = X.tolist()
    index = {tuple(x): s for s, x in enumerate(states)}
    P = torch.zeros(len(X), len(X), dtype=torch.float64)
    for s, x in enumerate(states):
        for order in itertools.permutations(range(m.length), k):
            for residues in itertools.product(range(m.vocab_size), repeat=k):
                if informed and any(a == x[j] for j, a in zip(order, residues)):
                    continue  # an informed move changes every site it visits
                y = list(x)
                for j, a in zip(order, residues):
                    y[j] = a
                t = index[tuple(y)]
                fwd = path_prob(x, R[s], order, y, informed, T)
                if t == s or fwd == 0:
                    continue
                la = -(float(E[t]) - float(E[s])) / tau
                if hastings:
                    la += math.log(path_prob(y, R[t], order, x, informed, T)) - math.log(fwd)
                choose = 1.0 if informed else 1.0 / math.perm(m.length, k)
                a = min(1.0, math.exp(la))
                if kw.get("delayed"):
                    est = first_stage(x, y, order, R[s], informed, T, tau)
                    if second:
                        la += min(0.0, first_stage(y, x, order, R[t], informed, T, tau)) - min(0.0, est)
                    a = min(1.0, math.exp(est)) * min(1.0, math.exp(la))
                P[s, t] += choose * fwd * a
    P[range(len(X)), range(len(X))] = 1 - P.sum(1)
    return P


def target_law(m, kw) -> torch.Tensor:
    X = all_sequences(m.vocab_size, m.length)
    return torch.softmax(-ref_energies(m, X, kw.get("energy", "local")) / kw.get("target_temperature", 1.0), 0)


def stationary(P: torch.Tensor) -> torch.Tensor:
    K = len(P)
    A = torch.cat([(P - torch.eye(K, dtype=P.dtype)).T, torch.ones(1, K, dtype=P.dtype)])
    b = torch.zeros(K + 1, dtype=P.dtype)
    b[-1] = 1
    return torch.linalg.lstsq(A, b[:, None]).solution[:, 0]


def index_of(m, ids):
    base = m.vocab_size ** torch.arange(m.length - 1, -1, -1)
    return (ids.reshape(-1, m.length) * base).sum(-1)


def empirical(m, ids) -> torch.Tensor:
    c = torch.bincount(index_of(m, ids), minlength=m.vocab_size**m.length).double()
    return c / c.sum()


def tv(p, q) -> float:
    return 0.5 * float((p - q).abs().sum())


def tv_bound(p, n) -> float:
    """``E[TV]`` of ``n`` independent draws from ``p`` plus McDiarmid's deviation at ``DELTA``."""
    return 0.5 * float((p * (1 - p) / n).sqrt().sum()) + math.sqrt(math.log(1 / DELTA) / (2 * n))


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    seed, kw = CASES[request.param]
    m = exact(3, 3, seed=seed)
    return m, kw, transition_matrix(m, kw), target_law(m, kw)


def test_each_move_leaves_the_target_invariant_and_needs_its_hastings_correction(case):
    m, kw, P, pi = case
    assert (P >= -1e-15).all() and torch.allclose(P.sum(1), torch.ones(len(P), dtype=torch.float64))
    assert (pi @ P - pi).abs().max() < 1e-12
    flow = pi[:, None] * P
    assert (flow - flow.T).abs().max() < 1e-12  # detailed balance
    assert (stationary(P) - pi).abs().max() < 1e-9
    assert 1 - float((pi * P.diagonal()).sum()) > 0.1  # it moves
    wrong = stationary(transition_matrix(m, kw, hastings=False))
    assert tv(wrong, pi) > 0.01
    if kw.get("delayed"):  # without the second stage's correction the first stage biases it
        assert tv(stationary(transition_matrix(m, kw, second=False)), pi) > 0.01


def test_the_kernel_runs_the_matrix(case):
    """Chains all started at one state: after a few moves their law is that row of ``P`` to that power."""
    m, kw, P, pi = case
    n, steps = 6000, 2
    kernel = kernel_of(m, kw)
    X = all_sequences(3, 3)
    for s in (int(pi.argmin()), int(pi.argmax())):
        state = kernel.init(X[s].expand(n, 3).clone())
        g = gen(5 + s)
        for _ in range(steps):
            state, info = kernel.step(state, g)
            assert bool(info.active.all())
        law = torch.linalg.matrix_power(P, steps)[s]
        assert tv(law, empirical(m, state.ids)) < tv_bound(law, n)
        assert float(law[s]) < 0.9  # a kernel that does not move would fail


def test_sample_started_at_the_target_stays_there(case):
    m, kw, P, pi = case
    n = 4000
    start = all_sequences(3, 3)[torch.multinomial(pi, n, replacement=True, generator=gen(7))]
    r = sample(m, start, method="mh", epochs=2, burn_in=1, generator=gen(11), **kw)
    assert tv(pi, empirical(m, r.samples)) < tv_bound(pi, n)
    assert r.novel_rate > 0.1


def test_a_run_without_the_hastings_correction_is_caught(monkeypatch):
    """The same run with the reverse probability set to the forward one (no Hastings correction) ends off the target
    by more than the tolerance: the test above has power."""
    seed, kw = CASES["informed k=1"]
    m = exact(3, 3, seed=seed)
    pi, n, epochs = target_law(m, kw), 20000, 2
    wrong = transition_matrix(m, kw, hastings=False)
    drift = tv(pi @ torch.linalg.matrix_power(wrong, 3 * (epochs + 1)), pi)
    assert drift > 2 * tv_bound(pi, n)  # the wrong kernel's exact law is far enough to be seen
    from mlmprob.mcmc import engine

    accept = engine.log_acceptance  # the one engine's ratio, with the reverse probability set to the forward one
    monkeypatch.setattr(
        engine, "log_acceptance", lambda u_old, u_new, tau, rev, fwd: accept(u_old, u_new, tau, fwd, fwd)
    )
    start = all_sequences(3, 3)[torch.multinomial(pi, n, replacement=True, generator=gen(7))]
    r = sample(m, start, method="mh", epochs=epochs, burn_in=1, generator=gen(11), **kw)
    assert tv(pi, empirical(m, r.samples[-1])) > tv_bound(pi, n)


@pytest.mark.parametrize("kw", [{"informed": True, "sites": 3}, {"sites": 3}], ids=["informed", "plain"])
def test_per_chain_free_positions_fewer_than_sites(kw):
    """Half the chains free everywhere, half at positions 0 and 1 with position 2 fixed (fewer free positions than
    ``sites``: their moves change two); each half keeps its own target (``E`` over its free positions)."""
    m, n = exact(3, 3, seed=6), 3000
    X = all_sequences(3, 3)
    R = site_rows(m, X).log_softmax(-1)
    own = R.gather(-1, X[..., None])[..., 0]  # log q_t(x_t | x_-t) [K, T]
    pi_all = torch.softmax(own.sum(-1), 0)
    sub = X[:, 2] == 1
    pi_sub = torch.zeros(len(X), dtype=torch.float64)
    pi_sub[sub] = torch.softmax(own[sub, :2].sum(-1), 0)
    start = torch.cat(
        [X[torch.multinomial(p, n, replacement=True, generator=gen(3 + i))] for i, p in enumerate((pi_all, pi_sub))]
    )
    free = torch.ones(2 * n, 3, dtype=torch.bool)
    free[n:, 2] = False
    kernel = kernel_of(m, kw)
    state, g = kernel.init(start, free), gen(9)
    while state.epoch < 3:
        state, info = kernel.step(state, g)
    assert (state.ids[n:, 2] == 1).all()
    for half, p in ((slice(0, n), pi_all), (slice(n, 2 * n), pi_sub)):
        assert tv(p, empirical(m, state.ids[half])) < tv_bound(p, n)
        assert (state.ids[half] != start[half]).any(-1).float().mean() > 0.2


BAD = [
    ({"informed": True, "block_size": 2}, "so block_size must be 1"),
    ({"sites": 2, "top_p": 0.9}, "so top_p must be 1"),
    ({"informed": True, "order": "l2r"}, "so order must be 'random'"),
    ({"sites": 2, "proposal_temperature": 0.0}, "so proposal_temperature must be > 0"),
    ({"sites": 0}, "sites must be a positive integer"),
    ({"delayed": True}, "delayed=True screens moves: give it with informed=True or sites > 1"),
]


def test_delayed_acceptance_screens_moves_before_their_rows_are_read():
    """The same moves with delayed acceptance read fewer model rows: the first stage rejects some unread."""
    m = exact(4, 6, seed=2)
    start = torch.randint(4, (64, 6), generator=gen(1))
    kw = {"informed": True, "sites": 2}
    plain = sample(m, start, method="mh", epochs=3, burn_in=0, generator=gen(2), **kw)
    delayed = sample(m, start, method="mh", epochs=3, burn_in=0, generator=gen(2), delayed=True, **kw)
    assert delayed.forward_rows < 0.95 * plain.forward_rows
    assert delayed.novel_rate > 0.05


@pytest.mark.parametrize("kw,message", BAD)
def test_combinations_the_moves_are_not_exact_with_are_refused_in_one_line(kw, message):
    m = exact(3, 3)
    own = {k: v for k, v in kw.items() if k not in ("top_p", "proposal_temperature")}
    proposal = ProposalConfig(kw.get("proposal_temperature", 1.0), kw.get("top_p", 1.0))
    for make in (
        lambda: sample(m, torch.zeros(2, 3, dtype=torch.long), method="mh", **kw),
        lambda: MetropolisHastings(m, proposal=proposal, **own),
    ):
        with pytest.raises(MLMProbError) as e:
            make()
        assert message in str(e.value) and len(str(e.value).splitlines()) == 1


def test_the_command_line_takes_and_refuses_the_moves(tmp_path, capsys):
    from tests.conftest import save_tiny_bert

    argv = ["sample", "--seq", "EVQLVESGGGLVQ", "--positions", "3-9", "--method", "mh", "--no-progress"]
    assert main(argv + ["--model", "/nonexistent", "--informed", "--block-size", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "so block_size must be 1" in err and len(err.splitlines()) == 1  # refused before the model loads
    (tmp_path / "bert").mkdir()
    model = save_tiny_bert(tmp_path / "bert", init=0.5)
    out = tmp_path / "run.jsonl"
    extra = ["--informed", "--sites", "3", "--epochs", "2", "--burn-in", "0", "--chains", "2", "--out", str(out)]
    assert main(argv + ["--model", str(model), *extra]) == 0
    import json

    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(r["informed"] is True and r["sites"] == 3 for r in rows)
    assert all(r["sequence"][:2] == "EV" and r["sequence"][9:] == "GLVQ" for r in rows)
