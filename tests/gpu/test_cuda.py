"""The device path on a CUDA GPU (issue 12 §7): scoring, sampling, joints and infilling equal the CPU run.

Every test here is marked ``cuda`` and skipped unless the suite's device (``gpu_switch.DEVICE``, a CUDA GPU
unless ``MLMPROB_TEST_DEVICE`` says otherwise) is usable; run them where one is lent with ``pytest -m cuda``.
CI machines have none.
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

pytestmark = MARKS


@pytest.fixture(scope="module")
def pair():
    return model_pair("sapiens-vh")


def test_scoring_on_the_gpu_equals_the_cpu(pair):
    import mlmprob

    cpu, gpu = pair
    ids = cpu.encode([VH, VH[:60], VH[30:100]]).input_ids
    a, b = mlmprob.token_scores(cpu, ids), mlmprob.token_scores(gpu, ids)
    assert torch.allclose(a.log_prob, b.log_prob, atol=1e-4) and torch.allclose(a.raw, b.raw, atol=1e-3)
    assert a.log_prob.device.type == b.log_prob.device.type == "cpu"  # results come back to the host


def test_bf16_on_the_gpu_stays_close_and_finite(pair):
    import mlmprob

    cpu, _ = pair
    bf = mlmprob.load_mlm("sapiens-vh", device=DEVICE, dtype="auto")
    ids = cpu.encode([VH]).input_ids
    a, b = mlmprob.pll(cpu, ids), mlmprob.pll(bf, ids)
    assert torch.isfinite(b).all() and abs(float(a - b)) / ids.shape[1] < 0.1  # nats per token


def test_sampling_joints_infill_on_the_gpu_equal_the_cpu(pair):
    import mlmprob

    cpu, gpu = pair
    ids = cpu.encode([VH[:60]]).input_ids
    runs = [
        mlmprob.sample(m, ids.expand(2, -1), method="mh", epochs=2, generator=torch.Generator().manual_seed(0))
        for m in pair
    ]
    assert torch.equal(runs[0].samples, runs[1].samples)
    j = [mlmprob.pairwise_joint(m, ids[0], 5, 9, method="ag") for m in pair]
    assert torch.allclose(j[0], j[1], atol=1e-4)
    f = [mlmprob.infill(m, ids[0], [10, 11, 12], method="hcb", beam_size=3) for m in pair]
    assert [c.tokens for c in f[0]] == [c.tokens for c in f[1]]


def test_out_of_memory_back_off_on_the_gpu(pair, capsys):
    """The device hot path runs out of memory (a wrapper raises torch's OOM error above 8 rows): the
    primitive halves, keeps the smaller size, reports once, and the scores equal the unwrapped run's."""
    from conftest import DeviceOOMAbove

    import mlmprob

    cpu, gpu = pair
    ids = cpu.encode([VH] * 4).input_ids
    ref = mlmprob.pll(gpu, ids)
    fake = DeviceOOMAbove(gpu, 8)
    got = mlmprob.pll(fake, ids)
    assert torch.allclose(got, ref, atol=1e-3) and torch.allclose(got, mlmprob.pll(cpu, ids), atol=1e-3)
    assert fake.calls[0] > 8 and sum(c > 8 for c in fake.calls) <= 5 and fake.calls[-1] <= 8
    assert capsys.readouterr().err.count("out of memory") == 1
