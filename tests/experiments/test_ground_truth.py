"""The ground-truth experiment: exact helpers against enumeration, and a tiny end-to-end run."""

import json
import math

import pytest
import torch
from conftest import strict_json, strict_jsonl
from mdtable import row, tables_after
from mh_reference import energies as ref_energies
from mh_reference import epoch_kernel

from experiments.ground_truth import (
    GroundTruthConfig,
    adjacent_equal,
    all_states,
    empirical,
    kl,
    run,
    state_index,
    true_pair_joint,
    tv,
)
from experiments.ground_truth_report import write_report
from mlmprob import ExactMLM, MLMProbError
from mlmprob.synthetic import make_language
from mlmprob.training.data import SYMBOL_OFFSET

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread is fastest on a shared CPU


def test_true_pair_joint_matches_enumeration():
    lang = make_language("potts", 3, 4, seed=1, coupling=1.5)
    joint = lang.log_joint()  # [3, 3, 3, 3]
    x = torch.tensor([2, 0, 1, 1])
    got = true_pair_joint(lang, x, 1, 3)
    ref = joint[2, :, 1, :]
    ref = ref - torch.logsumexp(ref.reshape(-1), 0)
    assert torch.allclose(got, ref, atol=1e-10)


def test_state_index_and_statistics():
    s = all_states(3, 3)
    assert torch.equal(state_index(s, 3), torch.arange(27))
    assert adjacent_equal(torch.tensor([[1, 1, 1], [0, 1, 0], [2, 2, 0]])).tolist() == [2, 0, 1]
    p = torch.tensor([0.25, 0.75])
    assert tv(empirical(torch.tensor([1, 1, 1, 0]), 2), p) == pytest.approx(0.0)
    assert kl(p.log(), p.log()) == pytest.approx(0.0)
    assert kl(torch.tensor([0.0, 1.0]).log(), p.log()) == pytest.approx(-torch.log(torch.tensor(0.75)).item())


def test_plugin_tv_of_exact_draws_shrinks_with_sample_size():
    """The noise floor the report uses: TV of n i.i.d. draws falls roughly like 1/sqrt(n)."""
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(50, generator=g, dtype=torch.float64), 0)
    floors = [tv(empirical(torch.multinomial(p, n, replacement=True, generator=g), 50), p) for n in (100, 10000)]
    assert floors[1] < floors[0] / 5


def test_config_refuses_what_cannot_be_enumerated():
    with pytest.raises(MLMProbError, match="enumerate"):
        GroundTruthConfig(vocab_size=10, length=8)
    with pytest.raises(MLMProbError, match="gap lengths"):
        GroundTruthConfig(length=4, gap_lengths=(4,))


TINY = dict(
    vocab_size=3,
    length=4,
    couplings=(1.0,),
    n_train=400,
    n_heldout=40,
    steps=40,
    eval_every=20,
    n_pairs=4,
    n_gaps=4,
    gap_lengths=(2,),
    chains=16,
    sample_epochs=4,
    curve_coupling=1.0,
    curve_steps=(20, 40),
    masking_rates=(0.25, 0.5),
    masking_n_train=100,
    masking_steps=20,
)


def test_tiny_run_resumes_and_reports(tmp_path):
    cfg = GroundTruthConfig(**TINY)
    out, runs = tmp_path / "out", tmp_path / "runs"
    res = run(cfg, out, runs, progress=False, log=lambda *_: None)
    units = set(res.done)
    assert {
        "coupling/J1/train",
        "coupling/J1/pairs",
        "coupling/J1/infill-k2",
        "coupling/J1/samplers",
        "curve/step20/pairs",
        "curve/step40/infill-k2",
        "masking/r0.25-static/train",
        "masking/r0.5-dynamic/train",
        "masking/r0.5-dynamic/pairs",
        "masking/r0.25-static/samplers",
        "curve/step20/samplers",
    } <= units
    # the step curve's last point is the same model as the coupling run: identical numbers
    assert res.done["curve/step40/pairs"]["kl"] == res.done["coupling/J1/pairs"]["kl"]
    # model-free quantities of the records, by enumeration: the Potts statistic's exact law
    lang = make_language("potts", 3, 4, seed=0, coupling=1.0, field_scale=cfg.field_scale)
    p = lang.log_joint().reshape(-1).exp()
    s = res.done["coupling/J1/samplers"]
    exact_stat = torch.zeros(4, dtype=torch.float64).index_add_(0, adjacent_equal(all_states(3, 4)), p)
    assert s["stat_truth"] == pytest.approx(exact_stat.tolist(), abs=1e-9)
    assert s["mh"]["n_samples"] == 16 * 2 and len(s["mh"]["stat_tv"]) == 4
    # gaps of k = 2 with V = 3 and beam 5: the first step keeps all 3 tokens, the second scores all 9
    # fills, so a beam on the exact conditionals (chain rule, or HCB with a symbol pivot) is exhaustive
    infill = res.done["coupling/J1/infill-k2"]["methods"]
    for name, v in infill.items():
        if name.startswith("exact/"):
            assert v["mode"] == 1.0 and v["regret"] == pytest.approx(0.0, abs=1e-9), name
    # the train record is the run's own final evaluation
    from mlmprob.training import read_result

    assert res.done["coupling/J1/train"]["final"]["kl"] == read_result(runs / "potts-J1").history[-1]["kl"]
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(strict_jsonl(out / "results.jsonl")) == len(lines)
    strict_json((out / "config.json").read_text())
    run(cfg, out, runs, progress=False, log=lambda *_: None)  # resumes: nothing redone
    assert (out / "results.jsonl").read_text().splitlines() == lines
    report = write_report(out).read_text()
    for title in (
        "Unary conditionals",
        "Pair joints",
        "Samplers",
        "Infilling",
        "training steps",
        "Masking rate",
        "Answers",
    ):
        assert title in report
    # table cells against the raw records of results.jsonl
    raw = {r["unit"]: r for r in map(json.loads, lines)}
    (pairs,) = tables_after(report, "Pair joints")
    assert row(pairs, J="1")["KL HCB"] == f"{raw['coupling/J1/pairs']['kl']['hcb']:.4f}"
    assert row(pairs, J="1")["P-PPL true"] == f"{raw['coupling/J1/pairs']['p_ppl']['true']:.3f}"
    (samp,) = tables_after(report, "Samplers")
    assert row(samp, J="1")["MH TV truth"] == f"{raw['coupling/J1/samplers']['mh']['tv_truth']:.3f}"
    assert row(samp, J="1")["Gibbs TV target"] == f"{raw['coupling/J1/samplers']['gibbs']['tv_target']:.3f}"
    (fill,) = tables_after(report, "Infilling")
    std = row(fill, J="1", k="2", method="mlm/hcb-best")
    assert std["regret"] == f"{raw['coupling/J1/infill-k2']['methods']['mlm/hcb-best']['regret']:.4f}"
    (curve,) = tables_after(report, "Error vs training steps")  # a row joins three units of one step
    assert row(curve, step="20")["unary KL"] == f"{raw['curve/step20/pairs']['unary_kl']:.4f}"
    assert row(curve, step="20")["MH TV target"] == f"{raw['curve/step20/samplers']['mh']['tv_target']:.3f}"
    assert (
        row(curve, step="20")["infill mode HCB l2r"]
        == f"{raw['curve/step20/infill-k2']['methods']['mlm/hcb-l2r']['mode']:.3f}"
    )
    masking = tables_after(report, "Masking rate")[1]
    assert (
        row(masking, **{"mask rate": "0.25", "masking": "static"})["pair KL AG"]
        == f"{raw['masking/r0.25-static/pairs']['kl']['ag']:.4f}"
    )
    for fig in ("fig_samplers.png", "fig_training.png", "fig_masking.png", "fig_pairs.png", "fig_infill.png"):
        assert (out / fig).is_file()
    with pytest.raises(MLMProbError, match="different configuration"):
        run(GroundTruthConfig(**{**TINY, "n_pairs": 5}), out, runs, progress=False)
    assert json.loads((out / "config.json").read_text())["n_pairs"] == 4


# -- eval_pairs / eval_infill / eval_samplers against enumeration -------------------------------------


class SymbolView:
    """The exact conditionals of a synthetic language behind the ids of the trained symbol models
    (``[CLS] x + 5 [SEP]``, ``[MASK]`` = 4): the "trained MLM" of the evaluations, with a known answer.
    Special ids get logit -30 (no mass); proposals and fills are the ``V`` symbols. The logits are the
    log conditionals plus ``SHIFT * (sum of the observed symbols)``, the same for every output id of an
    input row: softmax ignores it, raw-logit methods (E_raw, MRF-logit) do not."""

    def __init__(self, lang):
        self.lang, V = lang, lang.vocab_size
        self.vocab_size, self.mask_id, self.pad_id = SYMBOL_OFFSET + V, 4, 0
        self.special_ids = frozenset({0, 1, 2, 3})
        self.proposal_ids = torch.arange(SYMBOL_OFFSET, SYMBOL_OFFSET + V)
        self.max_length = lang.length + 2

    def logits(self, ids):
        inner = ids[:, 1:-1]
        sym = torch.where(inner == self.mask_id, self.lang.mask_id, inner - SYMBOL_OFFSET)
        shift = SHIFT * torch.where(inner == self.mask_id, 0, sym).sum(-1)
        out = torch.full((*ids.shape, self.vocab_size), -30.0, dtype=torch.float64)
        out[:, 1:-1, SYMBOL_OFFSET:] = self.lang.conditionals(sym)
        return (out + shift[:, None, None]).float()


SHIFT = 0.4


def languages(T):
    """(truth, model): two Potts chains with different fields and couplings, V = 3."""
    return (
        make_language("potts", 3, T, seed=0, coupling=1.0, field_scale=0.5),
        make_language("potts", 3, T, seed=1, coupling=2.0, field_scale=1.0),
    )


def kl_(p, q):
    return float((p * (p.log() - q.log())).sum())


def test_eval_pairs_against_enumeration():
    """T = 2: the pair is the whole sequence, so every construction's joint is known in closed form
    from the model language's joint q: HCB and AG recover q (compatible conditionals), the MLM joint
    is q_a x q_b, MRF ~ q(a|b) q(b|a), MRF-logit the same times exp(SHIFT (w_a + w_b))."""
    from experiments.ground_truth import eval_pairs

    truth, model = languages(2)
    p, q = truth.log_joint().exp(), model.log_joint().exp()  # [3, 3]
    mrf = (q / q.sum(0, keepdim=True)) * (q / q.sum(1, keepdim=True))
    # MRF-logit adds the raw logits: each conditional's input holds the other symbol, shifted by SHIFT * it
    w = torch.arange(3, dtype=torch.float64)
    mrf_logit = mrf * torch.exp(SHIFT * (w[:, None] + w[None, :]))
    joints = {
        "hcb": q,
        "ag": q,
        "mlm": q.sum(1)[:, None] * q.sum(0)[None, :],
        "mrf": mrf / mrf.sum(),
        "mrf_logit": mrf_logit / mrf_logit.sum(),
    }
    held = truth.sample(6, torch.Generator().manual_seed(0))
    r = eval_pairs(SymbolView(model), truth, held, 6, seed=0)
    a, b = held[:, 0], held[:, 1]
    for m, j in joints.items():
        assert r["kl"][m] == pytest.approx(kl_(p, j), abs=1e-5), m
        assert r["p_ppl"][m] == pytest.approx(math.exp(-float(j[a, b].log().mean())), rel=1e-5), m
    assert r["p_ppl"]["true"] == pytest.approx(math.exp(-float(p[a, b].log().mean())), rel=1e-9)
    assert r["true_entropy_ppl"] == pytest.approx(math.exp(-float((p * p.log()).sum())), rel=1e-9)
    assert r["kl"]["mrf"] > r["kl"]["mlm"] > r["kl"]["hcb"] + 1e-3  # the cases are distinguishable


def test_eval_infill_against_enumeration():
    """A gap over the whole sequence (k = T; the start is then always 0) with a beam as wide as the
    V**k fills: every beam search is exhaustive and its chain rule exact, so on the model language the
    top fill is q's mode and on the truth p's mode. Mode share, gold share and regret follow."""
    from experiments.ground_truth import eval_infill

    truth, model = languages(3)
    lp, lq = truth.log_joint().reshape(-1), model.log_joint().reshape(-1)
    mode_p, mode_q = int(lp.argmax()), int(lq.argmax())
    assert mode_p != mode_q
    held = truth.sample(5, torch.Generator().manual_seed(1))
    idx = state_index(held, 3)
    r = eval_infill(SymbolView(model), truth, held, 5, k=3, beam=27, seed=0)
    assert r["n"] == 5 and len(r["methods"]) == 8
    for name, v in r["methods"].items():
        top = mode_q if name.startswith("mlm/") else mode_p
        assert v["mode"] == pytest.approx(float(top == mode_p)), name
        assert v["gold"] == pytest.approx(float((idx == top).double().mean())), name
        assert v["regret"] == pytest.approx(float(lp[mode_p] - lp[top]), abs=1e-9), name
    assert r["methods"]["mlm/standard-l2r"]["regret"] > 0.5


def test_eval_samplers_against_the_enumerated_kernels():
    """Targets and statistics by enumeration; the chains (uniform random starts) against the exact
    law after each sweep, from the enumerated MH and degenerate-Gibbs sweep kernels of the model
    (``mh_reference``). The reported TVs are of the pooled second half; each lies within the sampling
    error of the pooled samples (TV bound for 2000 independent chains) of the TV of the exact pooled law."""
    from experiments.ground_truth import eval_samplers

    truth, model = languages(3)
    V, T, n, S = 3, 3, 2000, 8
    X = all_states(V, T)
    p = truth.log_joint().reshape(-1).exp()
    exact_model = ExactMLM(model.log_joint())
    E = ref_energies(exact_model, X, "local")
    target = torch.softmax(-E, 0)
    stat = adjacent_equal(X)
    stat_law = lambda d: torch.zeros(T, dtype=torch.float64).index_add_(0, stat, d)  # noqa: E731
    cfg = GroundTruthConfig(vocab_size=V, length=T, gap_lengths=(1,), chains=n, sample_epochs=S)
    r = eval_samplers(SymbolView(model), truth, cfg, seed=0)
    assert r["tv_target_truth"] == pytest.approx(0.5 * float((target - p).abs().sum()), abs=1e-6)
    assert r["kl_truth_target"] == pytest.approx(kl_(p, target), abs=1e-5)
    assert r["stat_truth"] == pytest.approx(stat_law(p).tolist(), abs=1e-9)
    assert r["stat_target"] == pytest.approx(stat_law(target).tolist(), abs=1e-6)
    n_pooled = n * (S - S // 2)
    bound = lambda d, m: 0.5 * float((d * (1 - d) / m).sqrt().sum()) + math.sqrt(math.log(1e6) / (2 * m))  # noqa: E731
    for method in ("mh", "gibbs"):
        K = epoch_kernel(exact_model, X, E, 1.0, 1, gibbs=method == "gibbs")
        laws, d = [], torch.full((len(X),), 1 / len(X), dtype=torch.float64)
        for _ in range(S):
            d = d @ K
            laws.append(d)
        pooled = torch.stack(laws[S // 2 :]).mean(0)
        s = r[method]
        assert s["n_samples"] == n_pooled and len(s["stat_tv"]) == S
        assert abs(s["tv_target"] - 0.5 * float((pooled - target).abs().sum())) < bound(pooled, n)
        assert abs(s["tv_truth"] - 0.5 * float((pooled - p).abs().sum())) < bound(pooled, n)
        for e in (0, S - 1):  # the statistic's histogram of one epoch: n independent chains
            h, law = torch.tensor(s["stat_tv"][e]["hist"], dtype=torch.float64), stat_law(laws[e])
            assert 0.5 * float((h - law).abs().sum()) < bound(law, n)
        if method == "mh":  # truth and target swapped would not pass
            gap = abs(float((pooled - target).abs().sum()) - float((pooled - p).abs().sum())) / 2
            assert gap > 2 * bound(pooled, n)
    assert r["gibbs"]["accept_rate"] == 1.0 and 0 < r["mh"]["accept_rate"] < 1
    assert 0 < r["floor_truth"] < bound(p, n_pooled) and 0 < r["floor_target"] < bound(target, n_pooled)


def test_each_model_trains_with_the_configs_mapping_pinned():
    # a trained run resumes only when its TrainConfig is unchanged: the mapping is pinned field by field
    cfg = GroundTruthConfig(
        hidden=32, layers=3, heads=4, intermediate=64, batch_size=16, lr=0.01, eval_every=50, curve_steps=(50,), seed=7
    )
    want = dict(
        hidden_size=32,
        num_layers=3,
        num_heads=4,
        intermediate_size=64,
        dropout=0.0,
        max_steps=600,
        batch_size=16,
        lr=0.01,
        warmup_steps=60,
        weight_decay=0.01,
        grad_clip=1.0,
        mask_rate=0.5,
        mask_split=[1.0, 0.0, 0.0],
        masking="static",
        seed=7,
        eval_every=50,
        checkpoint_every=500,
        keep_checkpoints=1,
        kl_sequences=256,
        precision="fp32",
    )
    assert cfg.train_config(steps=600, mask_rate=0.5, masking="static").to_dict() == want
    small = GroundTruthConfig().train_config(steps=40, mask_rate=0.34)
    assert (small.warmup_steps, small.checkpoint_every, small.masking, small.max_steps) == (4, 40, "dynamic", 40)
