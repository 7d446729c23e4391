"""Exact decoder laws (``sampling.partial_states``, ``sampling.decoder_exact``) from the experiment's tables
against ``mlmprob.loglik``, ``mlmprob.sample``, the kernels and the model read directly, and the
``decoders_truth`` runner and report on tiny models."""

import math

import pytest
import torch

from experiments.decoders_truth import main, metrics, model_context, run
from experiments.decoders_truth_table import DECODERS
from experiments.ground_truth_chain_eval import conditional_tables
from experiments.ground_truth_common import GroundTruthConfig, all_states, state_index
from mlmprob import LookupMLM, loglik, sample
from mlmprob.runtime.log import read_log
from mlmprob.sampling import partial_states as dx
from mlmprob.sampling.decoder_exact import exact_output_distribution, model_logprobs, unmasking_law
from mlmprob.sampling.options import SCORES
from mlmprob.sampling.unmasking import Unmasking
from mlmprob.synthetic import make_language

pytestmark = pytest.mark.usefixtures("one_thread")

V, T = 3, 3


def lookup():
    return LookupMLM(V, T, seed=3)


@pytest.fixture(scope="module")
def lp():
    return dx.partial_log_probs(conditional_tables(lookup(), V, T, lambda x: x, 0), V, T)


def chi2(x: torch.Tensor, log_law: torch.Tensor) -> float:
    """Pearson's statistic of the draws ``x`` ``[N, T]`` against ``log_law`` (states of positive mass)."""
    n = torch.bincount(state_index(x, V), minlength=V**T).double()
    e = log_law.exp() * len(x)
    return float(((n - e) ** 2 / e)[e > 0].sum())


# df = 26: mean 26, sd sqrt(52) = 7.2; 26 + 6 sd = 69 (false alarm below 1e-6)
CHI2_LIMIT = 26 + 6 * math.sqrt(2 * 26)


def test_random_order_law_is_the_mixture_of_loglik_over_all_orders(lp):
    law = dx.exact_law(dx.random_order, lp, V, T)
    mix = loglik(lookup(), all_states(V, T), order="random", n_orders=6).mixture  # 3! = 6: every order, exact
    assert torch.allclose(law.log_probs, mix, atol=1e-6) and law.calls == pytest.approx(T)
    l2r = loglik(lookup(), all_states(V, T), order="l2r").per_order[:, 0]
    assert torch.allclose(dx.exact_law(dx.l2r, lp, V, T).log_probs, l2r, atol=1e-6)
    assert not torch.allclose(law.log_probs, l2r, atol=1e-2)  # incompatible conditionals: orders differ


def test_parallel_one_is_ancestral_and_one_step_ranked_is_the_one_pass_product(lp):
    anc = dx.exact_law(dx.random_order, lp, V, T).log_probs
    assert torch.allclose(dx.exact_law(dx.parallel(1), lp, V, T).log_probs, anc, atol=1e-12)
    prod = dx.exact_law(dx.parallel(T), lp, V, T)
    assert prod.calls == pytest.approx(1.0)
    x = all_states(V, T)
    want = sum(lp[-1, t][x[:, t]] for t in range(T))  # the all-mask row's marginals
    assert torch.allclose(prod.log_probs, want, atol=1e-12)
    for kind in SCORES:
        law = unmasking_law(Unmasking(lookup(), score=kind, steps=1), lp, V, T)
        assert torch.allclose(law.log_probs, want, atol=1e-12)
    two = dx.exact_law(dx.parallel(2), lp, V, T)
    assert two.calls == pytest.approx(2.0) and (two.log_probs.exp() - anc.exp()).abs().sum() > 0.05


SETTINGS = [
    dict(score="confidence", steps=2),
    dict(score="margin", steps=3),
    dict(score="entropy", steps=2),
    dict(score="confidence", steps=2, schedule="cosine"),
    dict(score="confidence", steps=2, block_length=2),
    dict(score="confidence", steps=2, remask=0.3, remask_steps=2),
    dict(score="margin", steps=3, remask=0.5, remask_steps=1),
]


@pytest.mark.parametrize("settings", SETTINGS)
def test_law_from_the_tables_is_the_models_and_the_kernels(lp, settings):
    """The experiment's route (``conditional_tables`` -> ``partial_log_probs``) gives the law of the model read
    through the forward primitive, and the kernel's draws follow it."""
    dec = Unmasking(lookup(), **settings)
    mine = unmasking_law(dec, lp, V, T)
    theirs = exact_output_distribution(dec, model_logprobs(lookup()), V, T)
    assert torch.allclose(mine.log_probs.exp(), theirs.probs, atol=1e-12)
    assert mine.calls == pytest.approx(theirs.calls, abs=1e-12)
    s, g = dec.init(torch.zeros(20000, T, dtype=torch.long)), torch.Generator().manual_seed(3)
    while s.epoch == 0:
        s, _ = dec.step(s, g)
    assert chi2(s.ids, mine.log_probs) < CHI2_LIMIT


def test_unmasking_kernel_monte_carlo_agrees_with_the_exact_law(lp):
    dec = Unmasking(lookup(), score="confidence", steps=2)
    law = unmasking_law(dec, lp, V, T).log_probs
    s, g = dec.init(torch.zeros(20000, T, dtype=torch.long)), torch.Generator().manual_seed(2)
    while s.epoch == 0:
        s, _ = dec.step(s, g)
    assert chi2(s.ids, law) < CHI2_LIMIT
    assert chi2(s.ids, dx.exact_law(dx.random_order, lp, V, T).log_probs) > 3 * CHI2_LIMIT


def test_every_decoder_of_the_table_gives_a_distribution():
    lang = make_language("potts", V, T, 0, coupling=1.0, field_scale=0.5)
    ctx, checks = model_context(lookup(), lang, seed=0, mc_draws=200, wrap=lambda x: x, offset=0)
    assert checks["check_mix"] < 1e-12 and checks["check_l2r_loglik"] < 1e-5
    for name, entry in DECODERS.items():
        out = entry.evaluate(ctx)
        rec = metrics(out, ctx)
        if "log_law" in out:
            assert rec["mass"] == pytest.approx(1.0, abs=1e-9), name
            assert 0 <= rec["tv_truth"] <= 1 and rec["kl_truth"] >= -1e-12, name
        else:
            assert 0 <= out["point"] < V**T and rec["kl_truth"] is None, name
        assert (
            rec["calls"] is None
            or 1 <= rec["calls"] <= {"argmax": 18, "ReMDM": 18, "adaptive": 2 * T}.get(entry.family, T) + 1e-9
        ), name
    assert metrics(DECODERS["ancestral random"].evaluate(ctx), ctx)["tv_model"] < 1e-12


def test_monte_carlo_of_sample_agrees_with_the_exact_laws(lp):
    m, n = lookup(), 20000
    start = torch.zeros(n, T, dtype=torch.long)
    par = dx.exact_law(dx.parallel(2), lp, V, T).log_probs
    mix = dx.exact_law(dx.random_order, lp, V, T).log_probs
    r = sample(
        m,
        start,
        method="ancestral",
        tokens_per_step=2,
        epochs=1,
        order="random",
        generator=torch.Generator().manual_seed(0),
    )
    assert chi2(r.samples[0], par) < CHI2_LIMIT
    assert chi2(r.samples[0], mix) > 3 * CHI2_LIMIT  # the test tells the two laws apart
    s = sample(
        m, start, method="speculative", draft_k=2, epochs=1, order="random", generator=torch.Generator().manual_seed(1)
    )
    assert chi2(s.samples[0], mix) < CHI2_LIMIT
    assert float(s.calls.double().mean()) < T  # fewer sequential calls than T


def test_runner_resumes_and_reports(tmp_path, capsys):
    cfg = GroundTruthConfig(
        vocab_size=V,
        length=T,
        couplings=(1.0,),
        gap_lengths=(1, 2),
        n_train=64,
        n_heldout=16,
        hidden=8,
        layers=1,
        heads=1,
        intermediate=8,
        steps=2,
        curve_steps=(2,),
        eval_every=2,
        batch_size=4,
    )
    names = (
        "ancestral random",
        "parallel k2",
        "confidence S2",
        "speculative k2",
        "mask-predict N1",
        "Gibbs (stationary)",
    )
    out = tmp_path / "out"
    run(cfg, out, tmp_path / "runs", seeds=(0,), decoders=names, mc_draws=50, log=lambda s: None)
    recs = list(read_log(out / "results.jsonl"))
    assert [r["unit"] for r in recs] == ["J1/seed0/model"] + [f"J1/seed0/{n}" for n in names]
    run(cfg, out, tmp_path / "runs", seeds=(0,), decoders=names, mc_draws=50, log=lambda s: None)
    assert len(list(read_log(out / "results.jsonl"))) == len(recs)  # nothing redone
    assert main(["--out", str(out), "--report-only"]) == 0
    text = (out / "README.md").read_text()
    assert "| parallel k2 | 2.00 |" in text and "| mask-predict N1 | 1.00 |" in text and "∞" in text
    assert (out / "fig_decoders.png").stat().st_size > 0
    assert main(["--out", str(out), "--runs", str(tmp_path / "runs"), "--decoders", "nope"]) != 0
    assert "unknown decoders" in capsys.readouterr().err


def test_real_decoders_run_measure_resume_and_report(tmp_path):
    from experiments.decoders_real import DECODERS as REAL
    from experiments.decoders_real import Input
    from experiments.decoders_real import main as real_main
    from experiments.decoders_real import run as real_run

    m = LookupMLM(3, 6, seed=4)
    native = torch.tensor([0, 1, 1, 2, 0, 0])
    free = torch.tensor([False, True, True, True, True, False])
    inputs = [Input("a", native, free), Input("b", torch.tensor([2, 2, 1, 0, 1, 2]), free)]
    out = tmp_path / "real"
    out.mkdir()
    real_run(out, {"toy": (m, inputs)}, samples=3, seed=0, log=lambda s: None)
    recs = list(read_log(out / "results.jsonl"))
    assert len(recs) == 2 * (1 + len(REAL))
    nat = recs[0]
    assert nat["unit"] == "toy/0/native" and nat["stutter"] == pytest.approx(1 / 3)  # pairs (1,2) (2,3) (3,4)
    want = float(loglik(m, native[None], free[None], order="l2r").per_order[0, 0]) / 4
    assert nat["loglik_per_token"] == pytest.approx(want)
    for r in recs[1:]:
        if "decoder" in r:
            assert len(r["samples"]) == 3 and all(len(s) == 4 for s in r["samples"]) and 0 <= r["distinct"] <= 1
    by = {r["decoder"]: r for r in recs if r.get("input") == 0 and "decoder" in r}
    assert by["ancestral random"]["calls"] == 4 and by["parallel k2"]["calls"] == 2
    assert by["speculative k2"]["calls"] <= 4 and by["mask-predict n/2"]["distinct"] == pytest.approx(1 / 3)
    real_run(out, {"toy": (m, inputs)}, samples=3, seed=0, log=lambda s: None)
    assert len(list(read_log(out / "results.jsonl"))) == len(recs)
    assert real_main(["--out", str(out), "--report-only"]) == 0
    text = (out / "README.md").read_text()
    assert "| ancestral random | n | 4.00 ± 0.00 |" in text and "## toy" in text


def test_real_bad_input_is_one_line(tmp_path, capsys):
    from experiments.decoders_real import main as real_main

    assert real_main(["--out", str(tmp_path / "x"), "--data", str(tmp_path), "--tasks", "english"]) != 0
    err = capsys.readouterr().err
    assert "snli_test.tsv not found" in err and "Traceback" not in err
    assert real_main(["--out", str(tmp_path / "x"), "--report-only"]) != 0
