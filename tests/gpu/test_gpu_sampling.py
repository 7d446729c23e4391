"""Every sampling method of the registry on the device equals the CPU, and a record's float32 result on the
device does not depend on the records beside it (issue 40).

Samplers: the same ``torch.Generator`` seed gives the same draws on both sides, as ``test_cuda.py`` asserts for
MH. That holds for every registered method because each draws on the host from the model's probabilities (the
generator is a CPU one; inverse-CDF draws, accept tests, confidence orders and thresholds only change where two
values are within float32 noise of each other, a measure-zero event for a trained model's conditionals); the
numbers the draws carry (energies, log-probabilities) agree to 1e-4 nats per position.
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
from mlmprob.sampling.spec import REGISTRY

pytestmark = MARKS
FREE = list(range(5, 17))  # the free positions: twelve, a few model calls per epoch


@pytest.fixture(scope="module")
def pair():
    return model_pair("sapiens-vh")


def _run(mlm, ids, method):
    return mlmprob.sample(mlm, ids, method=method, epochs=2, positions=FREE, generator=torch.Generator().manual_seed(0))


def test_the_registry_is_covered():
    assert set(REGISTRY) == {"mh", "gibbs", "ancestral", "speculative", "unmask", "adaptive", "mask-predict"}


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_each_sampler_on_the_device_equals_the_cpu(pair, method):
    cpu, dev = pair
    ids = cpu.encode([VH[:40], VH[40:80]]).input_ids
    a, b = _run(cpu, ids, method), _run(dev, ids, method)
    assert a.samples.shape == b.samples.shape == (2, 2, ids.shape[1])
    assert torch.equal(a.samples, b.samples) and torch.equal(a.final_ids, b.final_ids)
    assert torch.equal(a.samples[..., [0, 1, 2, 3, 4, 17]], ids[None, :, [0, 1, 2, 3, 4, 17]].expand(2, -1, -1))
    assert torch.equal(a.accept, b.accept) and a.forward_rows == b.forward_rows
    n = len(FREE) * ids.shape[0]
    for name in ("energy_local", "energy_raw", "log_prob"):
        x, y = getattr(a, name, None), getattr(b, name, None)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.device.type == y.device.type == "cpu" and torch.allclose(x, y, atol=1e-4 * n), name
    if REGISTRY[method].draws:
        assert torch.equal(a.rounds, b.rounds) and torch.equal(a.calls, b.calls)


def test_mask_predict_function(pair):
    cpu, _ = pair
    ids = cpu.encode([VH[:40]]).input_ids
    a, b = (mlmprob.mask_predict(m, ids, 3, FREE) for m in pair)
    assert torch.equal(a.history, b.history) and torch.equal(a.free, b.free)
    assert torch.allclose(a.confidence, b.confidence, atol=1e-4) and a.confidence[a.free].lt(0).all()


def test_a_records_scores_do_not_depend_on_its_batch(pair):
    """Alone or among records of other lengths (padded wider), a record's float32 scores are the same bits."""
    _, dev = pair
    seqs = [VH[:37], VH[:90], VH[50:62], VH]
    together = mlmprob.token_scores(dev, dev.encode(seqs).input_ids)
    for i, s in enumerate(seqs):
        alone = mlmprob.token_scores(dev, dev.encode([s]).input_ids)
        width = alone.log_prob.shape[1]
        assert torch.equal(together.log_prob[i, :width], alone.log_prob[0]), s
        assert torch.equal(together.raw[i, :width], alone.raw[0]) and not together.positions[i, width:].any()


def test_a_records_samples_do_not_depend_on_its_work_unit(tiny_bert_dir, tmp_path, monkeypatch):
    """``mlmprob sample`` on the device: every record's rows are the same bytes when each record is its own work
    unit as when the records share one (different lengths: padded batches)."""
    import json

    from mlmprob.cli import main
    from mlmprob.runtime import engine
    from mlmprob.runtime.writers import read_results

    seqs = ["ACDEFGHIKLMN", "ACD", "KLMNPQRSTVWYACDEFG", "WYAC", "GHIKLMNPQ"]
    inp = tmp_path / "in.fasta"
    inp.write_text("".join(f">s{i}\n{s}\n" for i, s in enumerate(seqs)))

    def run(name):
        out = tmp_path / name
        argv = ["sample", "--input", str(inp), "--model", str(tiny_bert_dir), "--device", DEVICE, "--dtype", "float32"]
        argv += ["--chains", "2", "--epochs", "2", "--burn-in", "1", "--block-size", "3:1", "--no-progress"]
        assert main([*argv, "--out", str(out)]) == 0
        rows = list(read_results(out))
        return {(r["id"], r.get("chain"), r.get("epoch")): json.dumps(r, sort_keys=True) for r in rows}, rows

    ref, rows = run("one.jsonl")
    assert len({r["id"] for r in rows}) == 2 * len(seqs)  # one id per chain: "s0/chain0", ...
    chunked = engine.chunked
    monkeypatch.setattr(engine, "chunked", lambda items, size: chunked(items, 1))
    alone, _ = run("alone.jsonl")
    assert alone == ref
