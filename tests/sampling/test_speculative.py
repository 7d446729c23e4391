"""Speculative ancestral sampling (``sampling.speculative``): exact draws of ``p_sigma`` in fewer
sequential model calls.

- the algorithm's output distribution, enumerated branch by branch with the module's own acceptance
  and residual rules, equals ``p_sigma`` of ``mlmprob.loglik`` to float64 precision on compatible
  (``ExactMLM``) and incompatible (``LookupMLM``) conditionals, and the same enumeration with the
  rejected position redrawn from ``pi`` instead of the residual does not (the check can fail);
- the kernel's draws, fixed seed, follow ``p_sigma`` (or the mixture over random orders) within a TV
  bound from the sample size, while the plain parallel sampler (``tokens_per_step``) on the same model
  and bound fails it (negative control); every draw's ``log_prob`` is ``loglik`` of its order;
- one round is one draft batch and one verification batch through the forward primitive;
- ``sample(method="speculative")``, its run file (resume), the CLI's folder and streamed modes.
"""

import itertools
import json
import math

import pytest
import torch
from sampling_fixtures import gen  # noqa: E402  (tests/ is on sys.path)

from mlmprob import ExactMLM, LookupMLM, loglik
from mlmprob.cli import main
from mlmprob.errors import MLMProbError
from mlmprob.models.exact import all_sequences
from mlmprob.sampling import Ancestral, ProposalConfig, proposal_log_probs, sample
from mlmprob.sampling.io import RunFile
from mlmprob.sampling.speculative import Speculative, accept_probability, residual_log_probs

pytestmark = pytest.mark.usefixtures("one_thread")

V, T = 3, 4
SEQS = all_sequences(V, T)
N = 12000


def tv_bound(p: torch.Tensor, n: int, delta: float = 1e-6) -> float:
    """E[TV(empirical, p)] <= 0.5 sum sqrt(p (1 - p) / n), plus McDiarmid's deviation at level delta."""
    return 0.5 * float((p * (1 - p) / n).sqrt().sum()) + math.sqrt(math.log(1 / delta) / (2 * n))


def code(ids: torch.Tensor) -> torch.Tensor:
    return (ids * (V ** torch.arange(T - 1, -1, -1))).sum(-1)


def empirical(ids: torch.Tensor) -> torch.Tensor:
    return torch.bincount(code(ids), minlength=V**T).double() / len(ids)


def tv(p, q) -> float:
    return 0.5 * float((p - q).abs().sum())


def epoch(kernel, n=N, seed=5):
    s = kernel.init(torch.zeros(n, T, dtype=torch.long))
    g = gen(seed)
    steps = 0
    while s.epoch == 0:
        s, _ = kernel.step(s, g)
        steps += 1
    return s, steps


# -- the algorithm, enumerated ------------------------------------------------------------------------------
_memo: dict = {}


def conditional(m, filled: dict, pos: int, proposal=ProposalConfig()) -> torch.Tensor:
    """The model's (proposal-transformed) log conditional at ``pos`` with ``filled`` revealed, the rest masked."""
    key = (id(m), tuple(sorted(filled.items())), pos, proposal)
    if key not in _memo:
        row = torch.full((1, T), m.mask_id)
        for p, v in filled.items():
            row[0, p] = v
        _memo[key] = (m, proposal_log_probs(m.logits(row)[0, pos][None], None, proposal)[0])
    return _memo[key][1]


def enumerate_speculative(m, order, k, proposal=ProposalConfig(), residual=True) -> torch.Tensor:
    """The probability of every output of one epoch along ``order``, summed over the algorithm's branches:
    the drafts of a round (independent, from the round's one pass), the acceptance test of each, the residual
    draw at the first rejection (``residual=False``: a draw from ``pi`` instead, the wrong rule) or the bonus."""
    out = torch.zeros(V**T, dtype=torch.float64)

    def finish(filled, weight):
        out[sum(filled[t] * V ** (T - 1 - t) for t in range(T))] += weight

    def round_(filled, m_done, weight):
        left = T - m_done
        if left == 0:
            return finish(filled, weight)
        kb = min(k, left)
        pos = order[m_done : m_done + kb]
        q = [conditional(m, filled, p, proposal) for p in pos]  # one pass at the round's state
        for y in itertools.product(range(V), repeat=kb):
            w = weight * math.prod(float(q[i][y[i]].exp()) for i in range(kb))
            if w == 0:
                continue
            prefix = {**filled, pos[0]: y[0]}  # y_1: q_1 is the chain-rule conditional
            for i in range(1, kb):
                pi = conditional(m, prefix, pos[i], proposal)
                a = float(accept_probability(pi[y[i]], q[i][y[i]]))
                if a < 1:
                    z_dist = residual_log_probs(pi[None], q[i][None])[0] if residual else pi
                    for z in range(V):
                        pz = float(z_dist[z].exp())
                        if pz > 0:
                            round_({**prefix, pos[i]: z}, m_done + i + 1, w * (1 - a) * pz)
                w *= a
                if w == 0:
                    break
                prefix[pos[i]] = y[i]
            else:
                if left > kb:  # all kept: the bonus position
                    pi = conditional(m, prefix, order[m_done + kb], proposal)
                    for z in range(V):
                        pz = float(pi[z].exp())
                        if pz > 0:
                            round_({**prefix, order[m_done + kb]: z}, m_done + kb + 1, w * pz)
                else:
                    finish(prefix, w)

    round_({}, 0, 1.0)
    return out


def p_sigma(m, order, proposal=ProposalConfig()) -> torch.Tensor:
    """The chain rule along ``order`` of the (proposal-transformed) conditionals, enumerated."""
    lp = torch.zeros(V**T, dtype=torch.float64)
    for i, x in enumerate(SEQS.tolist()):
        lp[i] = sum(
            float(conditional(m, {p: x[p] for p in order[:j]}, order[j], proposal)[x[order[j]]]) for j in range(T)
        )
    return lp.exp()


def test_accept_then_residual_gives_p_exactly():
    g = gen(0)
    p = torch.softmax(torch.randn(5, 7, generator=g, dtype=torch.float64) * 2, -1)
    q = torch.softmax(torch.randn(5, 7, generator=g, dtype=torch.float64) * 2, -1)
    q[:, :2] = 0  # pi has mass where q has none
    q = q / q.sum(-1, keepdim=True)
    a = accept_probability(p.log(), q.log()).nan_to_num(0.0)
    got = q * a + (1 - (q * a).sum(-1, keepdim=True)) * residual_log_probs(p.log(), q.log()).exp()
    assert torch.allclose(got, p, atol=1e-12)
    assert torch.equal(residual_log_probs(p.log(), p.log()), p.log())  # p = q: nothing to redraw


@pytest.mark.parametrize("model", ["exact", "lookup"])
@pytest.mark.parametrize("order", [[0, 1, 2, 3], [2, 0, 3, 1]])
def test_enumerated_output_distribution_is_p_sigma(model, order):
    m = ExactMLM.random(V, T, gen(3), scale=1.5) if model == "exact" else LookupMLM(V, T, seed=7)
    want = loglik(m, SEQS, order=[order]).per_order[:, 0].exp()
    assert torch.allclose(p_sigma(m, order), want, atol=1e-6)  # the test's chain rule is loglik's
    for k in (1, 2, 3, 4, 6):
        assert torch.allclose(enumerate_speculative(m, order, k), want, atol=1e-6), k
    if model == "lookup":  # redrawing a rejected position from pi is not exact: the enumeration sees it
        assert tv(enumerate_speculative(m, order, 3, residual=False), want) > 0.02


def test_enumerated_output_with_temperature_and_nucleus():
    m = LookupMLM(V, T, seed=11)
    prop = ProposalConfig(temperature=0.7, top_p=0.8)
    want = p_sigma(m, [1, 3, 0, 2], prop)
    assert abs(float(want.sum()) - 1) < 1e-9
    assert torch.allclose(enumerate_speculative(m, [1, 3, 0, 2], 3, prop), want, atol=1e-9)


# -- the kernel's draws ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("order,k", [("l2r", 2), ("l2r", 4), ([[2, 0, 3, 1]], 3)])
def test_draws_follow_p_sigma_where_parallel_decoding_does_not(order, k):
    m = LookupMLM(V, T, seed=7)
    r = loglik(m, SEQS, order=order).per_order[:, 0]
    want = r.exp()
    bound = tv_bound(want, N)
    s, steps = epoch(Speculative(m, order=order, draft_k=k))
    assert tv(empirical(s.ids), want) < bound
    assert torch.allclose(s.log_prob, r[code(s.ids)], atol=1e-9)  # log p_sigma of each draw
    # the plain parallel sampler, k positions per step from one pass, fails the same test
    a = Ancestral(m, order=order, tokens_per_step=k)
    st = a.init(torch.zeros(N, T, dtype=torch.long))
    while st.epoch == 0:
        st, _ = a.step(st, gen(5))
    assert tv(empirical(st.ids), want) > 2 * bound
    # cost: never more sequential calls than positions, fewer on average; some drafts kept, some not
    assert (s.calls <= T).all() and float(s.calls.double().mean()) < T
    assert 0 < int(s.kept.sum()) < int(s.tested.sum())


def test_random_orders_draw_the_mixture():
    m = LookupMLM(V, T, seed=7)
    s, _ = epoch(Speculative(m, order="random", draft_k=3))
    r = loglik(m, SEQS, order="random", n_orders=24)
    mix = r.mixture.exp()
    assert tv(empirical(s.ids), mix) < tv_bound(mix, N)
    assert tv(mix, r.per_order[:, 0].exp()) > 3 * tv_bound(mix, N)  # the mixture is not one order's
    per = loglik(m, s.ids[:300], order=[list(o) for o in itertools.permutations(range(T))]).per_order
    assert ((per - s.log_prob[:300, None]).abs().min(1).values < 1e-9).all()


def test_compatible_conditionals_give_the_joint():
    m = ExactMLM.random(V, T, gen(3), scale=1.5)
    s, _ = epoch(Speculative(m, order="random", draft_k=2))
    joint = m.log_joint.flatten().exp()
    assert tv(empirical(s.ids), joint) < tv_bound(joint, N)
    assert torch.allclose(s.log_prob, m.log_prob(s.ids), atol=1e-5)


def test_greedy_draws_are_the_greedy_chain_rule_decode():
    m = LookupMLM(V, T, seed=7)
    prop = ProposalConfig(temperature=0.0)
    s, _ = epoch(Speculative(m, order="r2l", draft_k=3, proposal=prop), n=5)
    a = Ancestral(m, order="r2l", proposal=prop)
    st = a.init(torch.zeros(5, T, dtype=torch.long))
    while st.epoch == 0:
        st, _ = a.step(st, gen(0))
    assert torch.equal(s.ids, st.ids) and torch.allclose(s.log_prob, st.log_prob)


@pytest.mark.parametrize("k", [1, 3, 7])
def test_chains_with_different_free_positions_and_context(k):
    m = LookupMLM(3, 5, seed=3)
    free = torch.tensor([[1, 1, 1, 1, 1], [0, 1, 0, 1, 0], [0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 1, 1, 1, 0]]).bool()
    ids = torch.tensor([[0, 0, 0, 0, 0], [2, 0, 1, 0, 2], [1, 1, 1, 1, 1], [0, 2, 2, 2, 2], [1, 0, 0, 0, 1]])
    sp = Speculative(m, order="r2l", draft_k=k)
    s = sp.init(ids, free)
    g = gen(0)
    while s.epoch == 0:
        s, _ = sp.step(s, g)
    assert ((s.ids == ids) | free).all() and (s.ids < m.mask_id).all()
    some = [0, 1, 3, 4]  # chain 2 has nothing to draw
    want = loglik(m, s.ids[some], free[some], order="r2l").per_order[:, 0]
    assert torch.allclose(s.log_prob[some], want, atol=1e-9) and s.log_prob[2] == 0
    assert s.rounds[2] == s.calls[2] == 0 and (s.calls <= free.sum(1)).all()


class CountingLookup(LookupMLM):
    """Counts the model's batches (calls of ``logits``) besides its rows."""

    batches = 0

    def logits(self, input_ids):
        self.batches += 1
        return super().logits(input_ids)


def test_one_round_is_a_draft_batch_and_one_verification_batch():
    m = CountingLookup(V, 6, seed=2)
    k = Speculative(m, order="l2r", draft_k=3)
    s = k.init(torch.zeros(50, 6, dtype=torch.long))
    g = gen(1)
    while s.epoch == 0:
        before_b, before_r, rows_before = m.batches, m.calls, s.forward_rows
        rounds_before = 0 if s.rounds is None else int(s.rounds.sum())
        s, info = k.step(s, g)
        verified = m.batches - before_b - 1
        assert verified in (0, 1)  # the k rows of a round: one batch
        assert m.calls - before_r == s.forward_rows - rows_before == info.forward_rows
        assert int(s.rounds.sum()) > rounds_before
    assert int(s.calls.max()) <= 6 and float(s.rounds.double().mean()) < 6


# -- the API, run files, CLI ----------------------------------------------------------------------------------
def test_sample_api_reports_costs_and_resumes(tmp_path):
    m = LookupMLM(V, T, seed=7)
    ids = torch.zeros(8, T, dtype=torch.long)
    kw = dict(method="speculative", order="random", draft_k=3, generator=gen(3))
    full = sample(m, ids, epochs=4, **kw)
    assert full.rounds.shape == full.calls.shape == (4, 8) and (full.calls <= T).all()
    assert 0 < full.accept_rate < 1 and full.proposal_counts.sum() > 0
    per = loglik(m, full.samples.reshape(-1, T), order=[list(o) for o in itertools.permutations(range(T))]).per_order
    assert ((per - full.log_prob.reshape(-1, 1)).abs().min(1).values < 1e-9).all()
    one = sample(m, ids, method="ancestral", order="random", epochs=4, generator=gen(3))
    assert (one.calls == T).all() and (one.rounds == T).all() and one.forward_rows == 4 * 8 * T
    path = tmp_path / "s.jsonl"
    sample(m, ids, epochs=2, run_file=RunFile(path), **{**kw, "generator": gen(3)})
    resumed = sample(m, ids, epochs=4, run_file=RunFile(path), **{**kw, "generator": gen(99)})
    assert torch.equal(full.samples, resumed.samples) and torch.equal(full.log_prob, resumed.log_prob)
    assert torch.equal(full.calls, resumed.calls) and full.forward_rows == resumed.forward_rows
    with pytest.raises(MLMProbError, match="draft_k must be a positive integer"):
        sample(m, ids, method="speculative", draft_k=0, epochs=1)
    with pytest.raises(MLMProbError, match="draft_k is for method='speculative'"):
        sample(m, ids, method="ancestral", draft_k=2, epochs=1)
    with pytest.raises(MLMProbError, match="tokens_per_step is for method='ancestral'"):
        sample(m, ids, method="speculative", tokens_per_step=2, epochs=1)
    with pytest.raises(MLMProbError, match="another"):
        sample(m, ids, epochs=4, run_file=RunFile(path), **{**kw, "draft_k": 2})


TRASTUZUMAB_VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    "WGGDGFYAMDYWGQGTLVTVSS"
)
SEQ = " ".join(TRASTUZUMAB_VH)


@pytest.fixture(scope="module")
def peaked_bert_dir(tmp_path_factory):
    from tests.conftest import save_tiny_bert

    return save_tiny_bert(tmp_path_factory.mktemp("peakedbert"), init=0.5)


def _argv(model, out, *extra):
    return [
        "sample",
        "--model",
        str(model),
        "--seq",
        SEQ,
        "--cdr",
        "H3",
        "--numbering",
        "kabat",
        "--method",
        "speculative",
        "--chains",
        "2",
        "--epochs",
        "3",
        "--out",
        str(out),
        "--no-progress",
        "--device",
        "cpu",
        *extra,
    ]


def test_cli_folder_and_streamed_rows(peaked_bert_dir, tmp_path, capsys):
    from mlmprob.models import load_mlm
    from mlmprob.runtime.writers import read_results

    out = tmp_path / "run"
    assert main(_argv(peaked_bert_dir, out, "--order", "l2r", "--draft-k", "3")) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["method"], summary["order"], summary["draft_k"], summary["burn_in"]) == ("speculative", "l2r", 3, 0)
    assert summary["calls_per_sample"] <= 11 and summary["acceptance_length"] >= 1
    assert 0 <= summary["accept_rate"] <= 1 and summary["novel_rate"] is None
    lines = [json.loads(x) for x in (out / "run.jsonl").read_text().splitlines()]
    head, recs = lines[0], lines[1:]
    assert head["config"]["draft_k"] == 3 and all(len(r["rounds"]) == len(r["calls"]) == 2 for r in recs)
    mlm = load_mlm(str(peaked_bert_dir), device="cpu", dtype="float32")
    for r in recs:
        want = loglik(mlm, torch.tensor(r["ids"]), torch.tensor(head["free"], dtype=torch.bool), order="l2r")
        assert torch.allclose(torch.tensor(r["log_prob"], dtype=torch.float64), want.per_order[:, 0], atol=1e-4)
    rows_path = tmp_path / "rows.jsonl"
    argv = _argv(peaked_bert_dir, rows_path, "--order", "l2r")
    assert main(argv) == 0
    rows = list(read_results(rows_path))
    assert [r["id"] for r in rows] == ["seq1/chain0", "seq1/chain1"]
    assert all(
        r["method"] == "speculative"
        and r["draft_k"] == 4
        and r["calls_per_sample"] <= 11
        and r["acceptance_length"] >= 1
        and math.isfinite(r["log_prob"])
        for r in rows
    )
    assert main(argv + ["--resume"]) == 0 and list(read_results(rows_path)) == rows
    capsys.readouterr()
    assert main(argv + ["--resume", "--draft-k", "2"]) == 2  # other settings: refused
    assert "draft_k" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--block-size", "2"], "--block-size does not apply to --method speculative"),
        (["--tokens-per-step", "2"], "--tokens-per-step is for --method ancestral"),
        (["--method", "ancestral", "--draft-k", "2"], "--draft-k is for --method speculative"),
    ],
)
def test_cli_options_that_do_not_apply(peaked_bert_dir, tmp_path, capsys, extra, message):
    out = tmp_path / "run"
    assert main(_argv(peaked_bert_dir, out, *extra)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()
