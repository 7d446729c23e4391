"""Pairwise joints (Torroba Hennigen & Kim 2023) against exact enumeration on tiny models."""

from __future__ import annotations

import argparse
import json
import math

import pytest
import torch
from mdtable import printed, row, tables_after

from mlmprob import ExactMLM
from mlmprob.errors import MLMProbError
from mlmprob.joints import (
    METHODS,
    ag_joint,
    ag_objective,
    ci_gap,
    evaluate_pair,
    hcb_joint,
    joint_from,
    mlm_joint,
    mrf_joint,
    pair_conditionals,
    pair_metrics,
    pairwise_joint,
    summarize,
    topk_candidates,
)
from mlmprob.joints.job import JointsSpec, load_records, run_joints
from mlmprob.joints.report import write_report
from mlmprob.models.exact import LookupMLM
from mlmprob.models.reader import reader_of
from mlmprob.runtime.command import RunOptions


class Counting:
    """Wraps a MaskedLM and counts batched calls and forwarded rows."""

    def __init__(self, mlm):
        self.mlm, self.calls, self.rows = mlm, 0, 0
        self.mask_id, self.vocab_size = mlm.mask_id, mlm.vocab_size

    def logits(self, ids):
        self.calls += 1
        self.rows += ids.shape[0]
        return self.mlm.logits(ids)


class MaskInVocab:
    """An exact model over V+1 tokens whose last token doubles as the mask *input* and *output*:
    inputs holding it are observed values (not marginalised), so its conditionals stay those of
    one joint over (V+1)^T, and the mask token has an output probability."""

    def __init__(self, joint_model: ExactMLM):
        self.inner = joint_model
        self.vocab_size = joint_model.vocab_size
        self.mask_id = joint_model.vocab_size - 1

    def logits(self, ids):
        return self.inner.logits(ids)


def true_pair_joint(m: ExactMLM, ids: torch.Tensor, a: int, b: int) -> torch.Tensor:
    """log p(x_a, x_b | rest) by enumeration, rows x_a."""
    idx = [slice(None) if t in (a, b) else int(ids[t]) for t in range(m.length)]
    t = m.log_joint[tuple(idx)]
    if a > b:
        t = t.T
    return t - torch.logsumexp(t.flatten(), 0)


def exact_model(seed: int, V: int = 4, T: int = 4) -> ExactMLM:
    return ExactMLM.random(V, T, torch.Generator().manual_seed(seed))


PAPER_JOINT = torch.tensor([[0.97, 0.01], [0.01, 0.01]])  # App. B


# -- conditionals -------------------------------------------------------------------------------------
@pytest.mark.parametrize("a,b", [(1, 3), (3, 0)])
def test_conditionals_match_single_forward_passes(a, b):
    m = LookupMLM(3, 4, seed=5)
    ids = torch.tensor([2, 0, 1, 1])
    pc = pair_conditionals(m, ids, a, b)
    for w in range(3):
        x = ids.clone()
        x[a] = m.mask_id
        x[b] = w
        ref = torch.log_softmax(m.logits(x[None])[0, a].double(), 0)
        torch.testing.assert_close(pc.cond_a[:, w], ref)
        x = ids.clone()
        x[b] = m.mask_id
        x[a] = w
        ref = torch.log_softmax(m.logits(x[None])[0, b].double(), 0)
        torch.testing.assert_close(pc.cond_b[w, :], ref)
        torch.testing.assert_close(pc.logit_b[w, :], m.logits(x[None])[0, b].double())
    x = ids.clone()
    x[[a, b]] = m.mask_id
    out = m.logits(x[None])[0].double()
    torch.testing.assert_close(pc.marg_a, torch.log_softmax(out[a], 0))
    torch.testing.assert_close(pc.marg_b, torch.log_softmax(out[b], 0))
    assert pc.gold == (int(ids[a]), int(ids[b])) and pc.outside_mass["unary"] == pytest.approx(0, abs=1e-9)


@pytest.mark.parametrize("batch_tokens,calls", [(10**6, 1), (8, 5), (4, 9)])
def test_forward_passes_are_2K_plus_1_and_batched(batch_tokens, calls):
    c = Counting(LookupMLM(4, 4, seed=0))
    pc = pair_conditionals(reader_of(c, batch_tokens), torch.tensor([0, 1, 2, 3]), 0, 2)
    assert c.rows == pc.n_forward == 2 * 4 + 1
    assert c.calls == pc.n_calls == calls  # ceil(9 / (batch_tokens // 4))
    full = pair_conditionals(LookupMLM(4, 4, seed=0), torch.tensor([0, 1, 2, 3]), 0, 2)
    torch.testing.assert_close(pc.logit_a, full.logit_a)
    torch.testing.assert_close(pc.logit_b, full.logit_b)


def test_candidates_restrict_and_renormalise():
    m = exact_model(1)
    ids = torch.tensor([1, 0, 3, 2])
    full = pair_conditionals(m, ids, 0, 2)
    sub = pair_conditionals(m, ids, 0, 2, candidates=[3, 1])
    ref = full.cond_a[[3, 1]][:, [3, 1]]
    torch.testing.assert_close(sub.cond_a, ref - torch.logsumexp(ref, 0, keepdim=True))
    assert sub.n_forward == 5 and sub.gold_index == (1, 0) and sub.outside_mass["unary"] > 0
    # HCB over a subset recovers the true joint restricted to the subset
    tj = true_pair_joint(m, ids, 0, 2)[[3, 1]][:, [3, 1]]
    torch.testing.assert_close(hcb_joint(sub), tj - torch.logsumexp(tj.flatten(), 0), atol=1e-5, rtol=0)
    top = topk_candidates(m, ids, 0, 2, k=2)
    assert len(top) == 2 and len(set(top.tolist())) == 2
    with pytest.raises(MLMProbError, match="repeated"):
        pair_conditionals(m, ids, 0, 2, candidates=[1, 1])
    with pytest.raises(MLMProbError, match="output vocabulary"):
        pair_conditionals(m, ids, 0, 2, candidates=[4])


# -- compatible conditionals: HCB and AG recover the joint, MRF does not --------------------------------
@pytest.mark.parametrize("seed,a,b", [(0, 1, 3), (1, 3, 0), (2, 0, 1)])
def test_exact_mlm_hcb_any_pivot_and_ag_recover_true_joint(seed, a, b):
    m = exact_model(seed)
    ids = torch.tensor([2, 1, 0, 3])
    truth = true_pair_joint(m, ids, a, b)
    pc = pair_conditionals(m, ids, a, b)
    for pa in range(4):
        for pb in range(4):
            torch.testing.assert_close(hcb_joint(pc, (pa, pb)).exp(), truth.exp(), atol=1e-5, rtol=0)
    ag = ag_joint(pc)
    assert ag.converged and ag.steps < 5000
    torch.testing.assert_close(ag.log_joint.exp(), truth.exp(), atol=1e-5, rtol=0)
    # the MLM joint is the product of the true conditional marginals
    marg = torch.logsumexp(truth, 1)[:, None] + torch.logsumexp(truth, 0)[None, :]
    torch.testing.assert_close(mlm_joint(pc), marg, atol=1e-5, rtol=0)
    # MRF is a different joint (Jensen gap): its error is far above the tolerance
    assert (mrf_joint(pc).exp() - truth.exp()).abs().max() > 1e-3
    # faithfulness: HCB and AG have zero A-KL, MRF does not
    assert pair_metrics(pc, hcb_joint(pc)).akl < 1e-6 and pair_metrics(pc, ag.log_joint).akl < 1e-6
    assert pair_metrics(pc, mrf_joint(pc)).akl > 1e-3
    # the fixed API agrees and is normalised
    for method in METHODS:
        j = pairwise_joint(m, ids[None], a, b, method=method)
        assert j.shape == (4, 4) and abs(float(torch.logsumexp(j.flatten(), 0))) < 1e-9
    torch.testing.assert_close(
        pairwise_joint(m, ids, a, b, method="hcb", pivot=(1, 2)).exp(), truth.exp(), atol=1e-5, rtol=0
    )


def test_paper_two_token_example_jensen_gap_and_slow_ag():
    m = ExactMLM(PAPER_JOINT.log())
    pc = pair_conditionals(m, torch.tensor([0, 0]), 0, 1)
    mrf = mrf_joint(pc)
    # App. B: KL(p_{1|2}(.|b) || q^MRF_{1|2}(.|b)) = log(1/196 + 1/4) - 1/2 log(1/196) ~ 1.27
    q = mrf[:, 1] - torch.logsumexp(mrf[:, 1], 0)
    kl = float((pc.cond_a[:, 1].exp() * (pc.cond_a[:, 1] - q)).sum())
    assert kl == pytest.approx(math.log(1 / 196 + 1 / 4) - 0.5 * math.log(1 / 196), abs=1e-5)
    assert kl == pytest.approx(1.27, abs=5e-3)  # the paper rounds to 1.27
    ag = ag_joint(pc)
    assert ag.converged and 200 < ag.steps < 5000  # hundreds of steps on this peaked example
    torch.testing.assert_close(ag.log_joint.exp(), PAPER_JOINT.double(), atol=1e-5, rtol=0)
    fifty = ag_joint(pc, steps=50)  # the paper's fixed 50 steps are not enough here
    assert fifty.steps == 50 and not fifty.converged
    assert (fifty.log_joint.exp() - PAPER_JOINT).abs().max() > 1e-3
    torch.testing.assert_close(hcb_joint(pc).exp(), PAPER_JOINT.double(), atol=1e-5, rtol=0)


def test_mask_pivot_uses_mask_output_probability():
    V = 3  # tokens 0..2 and the mask-as-token 3, all with positive probability
    inner = ExactMLM.random(V + 1, 3, torch.Generator().manual_seed(3))
    m = MaskInVocab(inner)
    ids = torch.tensor([0, 2, 1])
    cands = torch.arange(V)
    pc = pair_conditionals(m, ids, 2, 0, candidates=cands)
    assert pc.mask_logit_a is not None
    full = true_pair_joint(inner, ids, 2, 0)[:V, :V]
    truth = full - torch.logsumexp(full.flatten(), 0)
    for pivot in [(3, 3), (3, 1), (0, 3), (2, 1)]:
        torch.testing.assert_close(hcb_joint(pc, pivot).exp(), truth.exp(), atol=1e-5, rtol=0)
    with pytest.raises(MLMProbError, match="not a candidate"):
        hcb_joint(pair_conditionals(exact_model(0), torch.tensor([0, 1, 2, 3]), 0, 1), (4, 4))


# -- incompatible conditionals: AG is the most faithful ----------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_lookup_mlm_ag_monotone_and_most_faithful(seed):
    m = LookupMLM(4, 4, seed=seed)
    ids = torch.tensor([1, 3, 0, 2])
    pc = pair_conditionals(m, ids, seed % 4, (seed + 2) % 4)
    ag = ag_joint(pc, trace=True)
    assert ag.converged
    assert (ag.objective.diff() <= 1e-12).all(), "the AG objective must never increase"
    assert ag.objective[-1] < ag.objective[0]
    akl = {k: pair_metrics(pc, joint_from(pc, k)).akl for k in ("mrf", "mrf_logit", "hcb", "ag")}
    assert akl["ag"] < min(akl["mrf"], akl["mrf_logit"], akl["hcb"])
    assert akl["ag"] > 1e-3  # incompatible: no joint is exact
    assert float(ag.objective[-1]) == pytest.approx(2 * pc.size * akl["ag"], rel=1e-9)
    torch.testing.assert_close(ag_objective(pc, ag.log_joint), ag.objective[-1])


# -- metrics ---------------------------------------------------------------------------------------------------
def test_pair_metrics_against_loops():
    m = LookupMLM(3, 3, seed=11)
    ids = torch.tensor([2, 1, 0])
    pc = pair_conditionals(m, ids, 2, 0)
    K = 3
    ga, gb = 0, 2
    for method in METHODS:
        j = joint_from(pc, method)
        p = j.exp()
        kl = lambda P, Q: sum(P[i] * math.log(P[i] / Q[i]) for i in range(K))  # noqa: E731
        qa = [[float(pc.cond_a[i, w].exp()) for i in range(K)] for w in range(K)]
        qb = [[float(pc.cond_b[w, i].exp()) for i in range(K)] for w in range(K)]
        ja = [[float(p[i, w] / p[:, w].sum()) for i in range(K)] for w in range(K)]
        jb = [[float(p[w, i] / p[w, :].sum()) for i in range(K)] for w in range(K)]
        akl = sum(kl(qa[w], ja[w]) + kl(qb[w], jb[w]) for w in range(K)) / (2 * K)
        gkl = (kl(qa[gb], ja[gb]) + kl(qb[ga], jb[ga])) / 2
        r = pair_metrics(pc, j, use_mlm_unary=(method == "mlm"))
        assert r.akl == pytest.approx(akl, abs=1e-9) and r.gkl == pytest.approx(gkl, abs=1e-9)
        assert r.pair_logp == pytest.approx(math.log(p[ga, gb]), abs=1e-9)
        unary = (
            math.log(qa[gb][ga]) + math.log(qb[ga][gb])
            if method == "mlm"
            else math.log(ja[gb][ga]) + math.log(jb[ga][gb])
        )
        assert r.unary_logp == pytest.approx(unary, abs=1e-9)
    recs = [
        {"pair_logp": -1.0, "unary_logp": -3.0, "akl": 0.2, "gkl": 0.4},
        {"pair_logp": -2.0, "unary_logp": -1.0, "akl": 0.4, "gkl": 0.0},
    ]
    s = summarize(recs)
    assert (s.p_ppl, s.u_ppl, s.a_kl, s.g_kl) == pytest.approx((math.exp(3 / 4), math.exp(1.0), 0.3, 0.2))


def test_ci_gap_is_mutual_information_on_exact_model():
    m = exact_model(4)
    ids = torch.tensor([0, 0, 0, 0])
    pc = pair_conditionals(m, ids, 1, 2)
    t = true_pair_joint(m, ids, 1, 2)
    mi = float((t.exp() * (t - torch.logsumexp(t, 1, keepdim=True) - torch.logsumexp(t, 0, keepdim=True))).sum())
    assert mi > 1e-2
    assert ci_gap(pc) == pytest.approx(mi, abs=1e-5)
    g = torch.Generator().manual_seed(0)  # x_0 independent of x_1 given x_2
    indep = ExactMLM(
        torch.randn(3, 1, 3, generator=g, dtype=torch.float64) + torch.randn(1, 3, 3, generator=g, dtype=torch.float64)
    )
    assert ci_gap(pair_conditionals(indep, torch.tensor([0, 0, 0]), 0, 1)) < 1e-6


def test_bad_input_errors():
    m = exact_model(0)
    ids = torch.tensor([0, 1, 2, 3])
    with pytest.raises(MLMProbError, match="two different"):
        pairwise_joint(m, ids, 1, 1)
    with pytest.raises(MLMProbError, match="outside"):
        pairwise_joint(m, ids, 0, 7)
    with pytest.raises(MLMProbError, match="unknown pairwise joint method"):
        pairwise_joint(m, ids, 0, 1, method="gibbs")
    with pytest.raises(MLMProbError, match="only applies"):
        pairwise_joint(m, ids, 0, 1, method="mrf", pivot=(0, 0))
    with pytest.raises(MLMProbError, match="no mask token"):
        pairwise_joint(m, ids, 0, 1, method="hcb", pivot=(m.mask_id, 0))
    with pytest.raises(MLMProbError, match=r"\[L\] or \[1, L\]"):
        pairwise_joint(m, ids.expand(2, 4), 0, 1)


# -- Hugging Face wrapper and the runner ------------------------------------------------------------------------
def tiny_bert_mlm(vocab: int = 12, seed: int = 0):
    transformers = pytest.importorskip("transformers")
    from mlmprob.models.hf import HFMaskedLM
    from mlmprob.models.tokenizers import ResidueTokenizer

    cfg = transformers.BertConfig(
        vocab_size=vocab,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)  # weight init of this test model only; global state restored after
        model = transformers.BertForMaskedLM(cfg)
    letters = "ACDEFGH"[: vocab - 5]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *letters]
    tok = ResidueTokenizer(tokens, bos="[CLS]", eos="[SEP]", pad="[PAD]", mask="[MASK]", unk="[UNK]", max_length=32)
    return HFMaskedLM(model, tok, name="tiny", proposal_ids=tok.residue_ids, max_length=32)


def test_hf_wrapper_mask_pivot_and_proposals():
    m = tiny_bert_mlm()
    ids = m.encode(["ACDEFG"]).input_ids[0]
    pc = pair_conditionals(m, ids, 2, 4)
    assert pc.size == 7 and pc.n_forward == 15 and pc.mask_logit_a is not None
    assert 0 < pc.outside_mass["unary"] < 1
    x = ids.clone()
    x[2] = m.mask_id
    x[4] = int(pc.candidates[3])
    full = m.logits(x[None])[0, 2].double()
    torch.testing.assert_close(pc.logit_a[:, 3], full[pc.candidates], atol=1e-5, rtol=1e-5)
    for piv in [None, (m.mask_id, m.mask_id), (m.mask_id, int(pc.candidates[0]))]:
        j = hcb_joint(pc, piv)
        assert abs(float(torch.logsumexp(j.flatten(), 0))) < 1e-9
    # the mask pivot equals the formula with the mask token's output logits
    ref = (pc.logit_a - pc.mask_logit_a[None, :]) + (pc.marg_logit_b - pc.mask_logit_marg[1])[None, :]
    torch.testing.assert_close(hcb_joint(pc, (m.mask_id, m.mask_id)), ref - torch.logsumexp(ref.flatten(), 0))
    ev = evaluate_pair(m, ids, 2, 4, top_k=3)
    assert ev.conditionals.size == 3 and ev.conditionals.outside_mass["unary"] > pc.outside_mass["unary"]


def test_runner_resumes_and_reports(tmp_path):
    m = tiny_bert_mlm()
    data = tmp_path / "seqs.txt"
    data.write_text("ACDEFGH\nCDEA\nGGHACD\nA\nXYZ\n")
    cfg = JointsSpec(n_pairs=2, seed=1)
    seen = []
    recs = run_joints(m, data, RunOptions(str(tmp_path / "out")), cfg, progress=seen.append)
    assert len(recs) == 4 and len(seen) == 4
    assert all(r["scheme"] != "contiguous" or r["distance"] == 0 for r in recs)
    assert all(r["seq_index"] != 3 for r in recs)  # "A" has no pair
    assert all(r["seq_index"] != 4 for r in recs)  # "XYZ" cannot be encoded: skipped
    seen.clear()
    cfg3 = JointsSpec(n_pairs=3, seed=1)
    recs3 = run_joints(m, data, RunOptions(str(tmp_path / "out")), cfg3, progress=seen.append)
    assert len(seen) == 2 and len(recs3) == 6  # only the missing pair of each scheme

    def pair(r):
        return r["a"], r["b"], r["a_token_index"], r["b_token_index"]

    assert [pair(r) for r in recs3 if r["i"] < 2] == [pair(r) for r in recs]
    _, on_disk = load_records(tmp_path / "out" / "pairs.jsonl")
    assert len(on_disk) == 6
    # a line cut by a kill is dropped before appending: the next run redoes that pair only
    with (tmp_path / "out" / "pairs.jsonl").open("a") as f:
        f.write('{"kind": "pair", "scheme": "ran')
    seen.clear()
    cfg4 = JointsSpec(n_pairs=4, seed=1)
    recs4 = run_joints(m, data, RunOptions(str(tmp_path / "out")), cfg4, progress=seen.append)
    assert len(seen) == 2 and len(recs4) == 8 and len(load_records(tmp_path / "out" / "pairs.jsonl")[1]) == 8
    paths = write_report(recs3, tmp_path / "out")
    text = paths["report"].read_text()
    assert "| AG |" in text and "MRF-logit" in text and "random U-PPL" in text
    assert paths["plot"].stat().st_size > 1000
    summ = json.loads(paths["summary"].read_text())
    assert summ["table"]["random"]["ag"]["n"] == 3
    # Table 1 cells against the per-pair records: P-PPL = exp(-sum log q(gold pair) / 2n), A-KL = mean
    rand = [r["metrics"] for r in recs3 if r["scheme"] == "random"]
    (table, _) = tables_after(text, "Pairwise joints")
    hcb, ag = row(table, method="HCB"), row(table, method="AG")
    assert printed(hcb["random P-PPL"], math.exp(-sum(m["hcb"]["pair_logp"] for m in rand) / (2 * len(rand))))
    assert printed(ag["random U-PPL"], math.exp(-sum(m["ag"]["unary_logp"] for m in rand) / (2 * len(rand))))
    assert printed(ag["random A-KL"], sum(m["ag"]["akl"] for m in rand) / len(rand))
    with pytest.raises(MLMProbError, match="different configuration"):
        run_joints(m, data, RunOptions(str(tmp_path / "out")), JointsSpec(n_pairs=2, seed=2))


def test_cli_registers_and_reports(tmp_path, capsys):
    from mlmprob.commands import joints as cmd

    m = tiny_bert_mlm()
    data = tmp_path / "seqs.txt"
    data.write_text("ACDEFGH\nCDEA\n")
    run_joints(m, data, RunOptions(str(tmp_path / "out")), n_pairs=1)
    parser = argparse.ArgumentParser()
    cmd.register(parser.add_subparsers())
    args = parser.parse_args(
        ["joints", "--model", "tiny", "--data", str(data), "--out", str(tmp_path / "out"), "--report-only"]
    )
    assert args.func(args) == 0
    assert "| HCB |" in capsys.readouterr().out
