"""The exact chain-rule tables of the ground-truth experiment against ``mlmprob.loglik`` and the truth."""

import json

import pytest
import torch
from mh_reference import epoch_kernel
from mh_reference import states as ref_states

from experiments.ground_truth_chain import main, run, write_report
from experiments.ground_truth_chain_eval import conditional_tables, eval_chain, gibbs_stationary, order_log_probs
from experiments.ground_truth_common import GroundTruthConfig, all_states, tv
from mlmprob import LookupMLM, loglik
from mlmprob.synthetic import make_language

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread is fastest on a shared CPU


def lang(J=1.0):
    return make_language("potts", 3, 4, 0, coupling=J, field_scale=0.5)


def test_exact_conditionals_give_the_truth_in_every_order_but_not_the_pll_target():
    rec = eval_chain(lang(2.0).as_mlm(), lang(2.0))
    for name in ("l2r", "r2l", "mixture", "gibbs"):  # exact conditionals: Gibbs's stationary law is the truth
        assert rec[name]["tv"] < 1e-6 and rec[name]["mass"] == pytest.approx(1.0)
    assert rec["orders"]["tv_max"] < 1e-6 and rec["spread"]["kl_mean"] < 1e-9
    assert rec["pll_target"]["tv"] > 0.05  # exp(-E_local)/Z is not the joint even for exact conditionals
    assert rec["parallel_k2"]["tv"] > 0.01 and rec["parallel_vs_mixture"]["k2"] == pytest.approx(
        rec["parallel_k2"]["tv"]
    )


def test_tables_equal_loglik_for_incompatible_conditionals(tmp_path):
    m = LookupMLM(3, 4, seed=2)
    tabs = conditional_tables(m, 3, 4, lambda x: x, 0)
    orders = [(0, 1, 2, 3), (2, 0, 3, 1), (3, 2, 1, 0)]
    per = order_log_probs(tabs, 4, orders)
    states = all_states(3, 4)
    want = loglik(m, states, order=[list(o) for o in orders]).per_order.T
    assert torch.allclose(per, want, atol=1e-9)
    assert torch.allclose(per.exp().sum(1), torch.ones(3, dtype=torch.float64))
    par = order_log_probs(tabs, 4, orders, tokens_per_step=4)  # all from the all-masked conditionals
    allm = m.logits(torch.full((1, 4), m.mask_id))[0].double().log_softmax(-1)
    assert torch.allclose(par[0], sum(allm[t][states[:, t]] for t in range(4)))
    rec = eval_chain(m, lang())
    assert rec["check_max_abs"] < 1e-9 and rec["mixture"]["mass"] == pytest.approx(1.0)
    assert rec["spread"]["kl_mean"] > 0.05 and rec["orders"]["tv_min"] < rec["orders"]["tv_max"]
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "vocab_size": 3,
                "length": 4,
                "layers": 1,
                "hidden": 8,
                "batch_size": 4,
                "mask_rate": 0.3,
                "curve_steps": [10],
                "seeds": [0, 1],
            }
        )
    )
    (tmp_path / "results.jsonl").write_text(
        "".join(json.dumps({"coupling": 1.0, "step": 10, "seed": s, "unary_kl": 0.1, **rec}) + "\n" for s in (0, 1))
    )
    write_report(tmp_path)
    text = (tmp_path / "README.md").read_text()
    assert f"| 1 | 10 | 2 | 0.100 ± 0.000 | {rec['l2r']['tv']:.3f} ± 0.000 |" in text


def test_uniform_masking_draws_every_count_equally_often_among_maskable_positions(tmp_path):
    from mlmprob.training import SyntheticSource, TrainConfig, train
    from mlmprob.training.masking import select_uniform

    maskable = torch.ones(6000, 8, dtype=torch.bool)
    maskable[:, 0] = maskable[:, 7] = False
    sel = select_uniform(maskable, torch.Generator().manual_seed(1))
    assert not sel[:, [0, 7]].any()
    counts = torch.bincount(sel.sum(1), minlength=7).double()
    assert counts[0] == 0 and ((counts[1:] - 1000).abs() < 4 * (1000 * 5 / 6) ** 0.5).all()  # binomial sd, 4 sigma
    cfg = TrainConfig(
        hidden_size=8,
        num_layers=1,
        num_heads=1,
        intermediate_size=8,
        max_steps=2,
        eval_every=2,
        checkpoint_every=2,
        masking="uniform",
        batch_size=4,
    )
    res = train(cfg, SyntheticSource(lang(), 16, 4), tmp_path / "u", progress=False)
    assert res.step == 2 and res.history[-1]["step"] == 2


def _brute_force_gibbs(m, V, T):
    """Stationary law of degenerate Gibbs's random-order sweep: the eigenvector for eigenvalue 1 of the
    ``V**T x V**T`` sweep kernel that ``mh_reference`` enumerates (always-accepted single-site proposals)."""
    X = ref_states(V, T)
    K = epoch_kernel(m, X, torch.zeros(len(X), dtype=torch.float64), 1.0, 1, gibbs=True)
    assert torch.allclose(K.sum(1), torch.ones(len(X), dtype=torch.float64))
    w, vecs = torch.linalg.eig(K.T)
    pi = vecs[:, (w - 1).abs().argmin()].real
    return pi / pi.sum()


def test_gibbs_column_is_the_stationary_law_of_the_enumerated_sweep_kernel():
    m, L = LookupMLM(3, 4, seed=5), lang(2.0)
    pi = _brute_force_gibbs(m, 3, 4)
    assert torch.equal(ref_states(3, 4), all_states(3, 4))  # the same state order
    log_pi, conv = gibbs_stationary(conditional_tables(m, 3, 4, lambda x: x, 0), 3, 4)
    assert torch.allclose(log_pi.exp(), pi, atol=1e-9) and conv["residual"] < 1e-12
    rec = eval_chain(m, L)
    truth = torch.log_softmax(L.log_prob(all_states(3, 4)).double(), 0).exp()
    assert rec["gibbs"]["tv"] == pytest.approx(tv(truth, pi), abs=1e-9)
    assert rec["gibbs"]["mass"] == pytest.approx(1.0)
    # incompatible conditionals: the Gibbs law is neither the mixture over orders nor exp(-E_local)/Z
    tabs = conditional_tables(m, 3, 4, lambda x: x, 0)
    e_local = sum(tabs[1 << t][:, t] for t in range(4))
    assert tv(pi, torch.softmax(e_local, 0)) > 0.02
    mixture = order_log_probs(tabs, 4, [(0, 1, 2, 3), (3, 2, 1, 0)]).exp().mean(0)
    assert tv(pi, mixture) > 0.02


TINY = dict(
    vocab_size=3,
    length=4,
    couplings=(2.0,),
    n_train=200,
    n_heldout=20,
    steps=40,
    eval_every=20,
    curve_steps=(20, 40),
    hidden=16,
    intermediate=16,
)


def test_seed_i_trains_and_is_scored_on_language_i_and_the_report_draws_the_figure(tmp_path):
    from experiments.ground_truth_eval import symbol_mlm
    from mlmprob.training.checkpoint import latest_checkpoint
    from mlmprob.training.data import SYMBOL_OFFSET, wrap_symbols

    cfg = GroundTruthConfig(**TINY)
    out, runs = tmp_path / "fixed", tmp_path / "runs"
    res = run(cfg, out, runs, tokens_per_step=(2,), seeds=(0, 1), log=lambda *_: None)
    rec = res.done["chain/seed1/J2/step40"]
    assert rec["language_seed"] == 1 and json.loads((out / "config.json").read_text())["language_seed"] != 0
    mlm = symbol_mlm(latest_checkpoint(runs / "chain-J2-seed1-lang1"), 3)
    lang_of = lambda s: make_language("potts", 3, 4, s, coupling=2.0, field_scale=cfg.field_scale)  # noqa: E731
    again = [
        eval_chain(mlm, lang_of(s), wrap=wrap_symbols, offset=SYMBOL_OFFSET, tokens_per_step=(2,), seed=1)
        for s in (1, 0)
    ]
    assert again[0]["mixture"]["tv"] == pytest.approx(rec["mixture"]["tv"], abs=1e-9)
    assert abs(again[1]["mixture"]["tv"] - rec["mixture"]["tv"]) > 1e-3  # not language 0
    uni = tmp_path / "uniform"
    run(cfg, uni, runs, tokens_per_step=(2,), seeds=(0,), masking="uniform", log=lambda *_: None)
    assert main(["--out", str(out), "--report-only", "--figure-with", str(uni)]) == 0
    text = (out / "README.md").read_text()
    assert (out / "fig_chain.png").stat().st_size > 10_000 and "![TV to the truth](fig_chain.png)" in text
    assert "dashed uniform masks" in text and "seeds [0, 1]" in text and "Paired by seed" in text
    assert main(["--out", str(out), "--report-only", "--figure-with", str(uni)]) == 0  # again: one record
    assert len((out / "runs.jsonl").read_text().splitlines()) == 1
    assert "| 2 | 40 | 2 | " in text and "TV Gibbs" in text
