"""Every deterministic algorithm family on the device equals the CPU (issue 40): scoring (token scores, the PLL,
its one-pass estimates, energies), variant effects, pair joints by each construction, infilling by each method,
the chain-rule likelihood and design. float32 on both sides; the device model is ``gpu_switch.DEVICE``'s.

On a GPU the two sides are different computations (other kernels, other summation orders): values agree to the
tolerances of ``test_cuda.py`` (1e-4 on log-probabilities), discrete outcomes (argmax fills, beam orders) exactly.
"""

import pytest
import torch
from gpu_switch import (
    DEVICE,
    MARKS,
    VH,
    host_threads,  # noqa: F401 - the fixture MARKS uses
    model_pair,
)

import mlmprob

pytestmark = MARKS
ATOL = 1e-4  # nats, on log-probabilities and their sums over a few dozen positions


@pytest.fixture(scope="module")
def pair():
    return model_pair("sapiens-vh")


@pytest.fixture(scope="module")
def batch(pair):
    """Three records of different lengths (padded: the short ones' padding is never scored)."""
    return pair[0].encode([VH[:50], VH[:30], VH[60:100]]).input_ids


def _close(a, b, atol=ATOL, what=""):
    assert a.shape == b.shape, what
    diff = float((a - b).abs().nan_to_num(nan=0.0, posinf=0.0).max()) if a.numel() else 0.0
    assert torch.allclose(a, b, atol=atol, equal_nan=True), f"{what}: max difference {diff}"


def test_token_scores_pll_and_energies(pair, batch):
    cpu, dev = pair
    a, b = mlmprob.token_scores(cpu, batch), mlmprob.token_scores(dev, batch)
    assert torch.equal(a.positions, b.positions) and a.log_prob.device.type == b.log_prob.device.type == "cpu"
    _close(a.log_prob, b.log_prob, what="log_prob")
    _close(a.raw, b.raw, atol=1e-3, what="raw logits")
    _close(mlmprob.pll(cpu, batch), mlmprob.pll(dev, batch), atol=1e-3, what="pll")
    some = [3, 4, 5, 11]
    _close(mlmprob.pll(cpu, batch, some), mlmprob.pll(dev, batch, some), what="pll at given positions")
    for kind in ("local", "raw"):
        _close(mlmprob.energy(cpu, batch, kind=kind), mlmprob.energy(dev, batch, kind=kind), atol=1e-3, what=kind)
    words = torch.where(a.positions, torch.arange(batch.shape[1]).expand_as(batch) // 2, -1)  # two-token words
    ww = [mlmprob.token_scores(m, batch, word_ids=words).log_prob for m in pair]
    _close(ww[0], ww[1], what="whole-word")
    assert not torch.allclose(ww[0], a.log_prob)  # the whole-word variant is another computation


@pytest.mark.parametrize("method", ["one_pass", "unmasked"])
def test_one_pass_estimates(pair, batch, method):
    from mlmprob.onepass import one_pass_token_scores
    from mlmprob.onepass.spec import OnePassSpec

    cpu, dev = pair
    a, b = (one_pass_token_scores(m, batch, None, OnePassSpec(method)) for m in pair)
    _close(a.log_prob, b.log_prob, what=f"{method} log_prob")
    _close(mlmprob.pll(cpu, batch, method=method), mlmprob.pll(dev, batch, method=method), atol=1e-3)


def test_score_variants_every_method(pair):
    from mlmprob.variants.mutations import letter_ids
    from mlmprob.variants.spec import ALL_METHODS

    cpu, _ = pair
    wt = cpu.encode([VH[:40]]).input_ids[0]
    ids = [letter_ids(cpu, "ACDW")[c] for c in "ACDW"]
    mutants = [[(3, ids[0])], [(5, ids[1]), (9, ids[2])], [(12, ids[3]), (20, ids[0]), (21, ids[1])], [(30, ids[2])]]
    a, b = (mlmprob.score_variants(m, wt, mutants, methods=ALL_METHODS) for m in pair)
    assert list(a) == list(b) == list(ALL_METHODS)
    for name in a:
        _close(a[name], b[name], atol=1e-3, what=name)


@pytest.mark.parametrize("method", ["mlm", "mrf_logit", "mrf", "hcb", "ag"])
def test_pairwise_joint_each_construction(pair, method):
    cpu, _ = pair
    ids = cpu.encode([VH[:40]]).input_ids[0]
    a, b = (mlmprob.pairwise_joint(m, ids, 7, 12, method=method) for m in pair)
    assert a.shape == b.shape and a.dim() == 2 and a.shape[0] > 1
    _close(a, b, what=method)
    assert abs(float(torch.logsumexp(b.flatten(), 0))) < 1e-6  # normalised on the device too


@pytest.mark.parametrize(
    ("method", "order"), [("hcb", "l2r"), ("hcb", "best"), ("standard", "l2r"), ("standard", "best")]
)
def test_infill_beam_each_method_and_order(pair, method, order):
    cpu, _ = pair
    ids = cpu.encode([VH[:40]]).input_ids[0]
    a, b = (mlmprob.infill(m, ids, [10, 11, 12], method=method, order=order, beam_size=3) for m in pair)
    assert [c.tokens for c in a] == [c.tokens for c in b] and len(a) == 3
    _close(torch.tensor([c.score for c in a]), torch.tensor([c.score for c in b]), what="beam scores")


def test_infill_exhaustive_and_sampled(pair):
    cpu, _ = pair
    ids = cpu.encode([VH[:40]]).input_ids[0]
    for method in ("standard", "hcb"):
        a, b = (mlmprob.exhaustive_infill(m, ids, [10, 11], method=method, top=5) for m in pair)
        assert [c.tokens for c in a] == [c.tokens for c in b], method
        _close(torch.tensor([c.score for c in a]), torch.tensor([c.score for c in b]), what=method)
    # the same generator seed: the same draws (inverse-CDF draws on the host from probabilities equal to ~1e-6)
    a, b = (
        mlmprob.sample_infill(m, ids, [10, 11, 12], num_samples=4, generator=torch.Generator().manual_seed(3))
        for m in pair
    )
    assert [c.tokens for c in a] == [c.tokens for c in b]
    _close(torch.tensor([c.score for c in a]), torch.tensor([c.score for c in b]), what="sampled fills")


@pytest.mark.parametrize("order", ["l2r", "random"])
def test_loglik_chain_rule(pair, batch, order):
    a, b = (
        mlmprob.loglik(m, batch, [3, 4, 5, 6, 7], order=order, n_orders=3, generator=torch.Generator().manual_seed(1))
        for m in pair
    )
    assert torch.equal(a.orders, b.orders) and torch.equal(a.n_orders, b.n_orders)
    _close(a.per_order, b.per_order, what="per_order")
    _close(a.step_log_prob, b.step_log_prob, what="steps")
    _close(a.outside_mass, b.outside_mass, atol=1e-5, what="outside mass")


def test_design_mh(pair):
    """A short MH design run: the same generator seed gives the same chains (accept tests on the host against
    energies equal to ~1e-4) and the energies agree."""
    a, b = (
        mlmprob.design(m, VH[:40], method="mh", chains=2, steps=3, generator=torch.Generator().manual_seed(2))
        for m in pair
    )
    assert [r["sequence"] for r in a.rows] == [r["sequence"] for r in b.rows]
    for ra, rb in zip(a.rows, b.rows, strict=True):
        for key, value in ra.items():
            if isinstance(value, float) and key != "seconds":
                assert abs(value - rb[key]) < 1e-3, (key, value, rb[key])


def test_esm_rotary_and_half_precision_attention(tmp_path):
    """ESM-2's fused forward on the device (its rotary: one complex product on GPUs, real arithmetic on CPUs;
    a bfloat16 model attends in bfloat16 on GPUs): float32 equals the CPU to the suite's tolerance, bfloat16
    stays within 0.1 nats per token of it (the bf16 test of test_cuda.py)."""
    from conftest import save_esm

    from mlmprob import load_mlm
    from mlmprob.models.fused import attention_dtype

    d = save_esm(tmp_path / "esm", max_positions=40)
    cpu = load_mlm(str(d), device="cpu", dtype="float32")
    dev = load_mlm(str(d), device=DEVICE, dtype="float32")
    half = load_mlm(str(d), device=DEVICE, dtype="bfloat16")
    assert cpu.fused and dev.fused and half.fused
    ids = cpu.encode(["MKTAYIAKQRQISFVKSHFSRQ", "GSHMLEDPVAGK", "MKTAYIAKQRQ"]).input_ids
    a, b = mlmprob.token_scores(cpu, ids), mlmprob.token_scores(dev, ids)
    _close(a.log_prob, b.log_prob, what="float32 log-probabilities")
    c = mlmprob.token_scores(half, ids)
    per_token = (c.log_prob - a.log_prob).abs().sum() / a.positions.sum()
    assert torch.isfinite(c.log_prob).all() and float(per_token) < 0.1, float(per_token)
    want = torch.bfloat16 if torch.device(DEVICE).type == "cuda" else torch.float32
    assert attention_dtype(torch.bfloat16, torch.device(DEVICE).type) == want
