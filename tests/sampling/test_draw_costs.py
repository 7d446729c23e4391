"""Independent draws make no forward pass beyond their method's own: the energies of a draw are computed only
when the spec asks for them (``energies=True``, and the energy columns are then present), and what a draw cost
(``calls``, ``forward_rows``) counts every forward it made, the energy pass included when asked. Counted on a
tiny model whose forward counts its calls and rows."""

from types import SimpleNamespace

import pytest
import torch

from mlmprob import LookupMLM, sample
from mlmprob.sampling.spec import REGISTRY

V, T, B, E = 3, 4, 3, 2
DRAWS = [name for name, m in REGISTRY.items() if m.draws]


class Counted(LookupMLM):
    """``LookupMLM`` counting its forward calls and rows."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.forwards = self.rows = 0

    def logits(self, input_ids):
        self.forwards += 1
        self.rows += torch.as_tensor(input_ids).shape[0]
        return super().logits(input_ids)


def _run(method, **kw):
    m = Counted(V, T, seed=3)
    r = sample(
        m,
        torch.zeros(B, T, dtype=torch.long),
        method=method,
        epochs=E,
        generator=torch.Generator().manual_seed(1),
        **kw,
    )
    return m, r


def test_the_draws_are_the_only_independent_draws_and_energies_is_off_by_default():
    assert set(DRAWS) == {"ancestral", "speculative", "unmask", "adaptive", "mask-predict"}
    assert all(REGISTRY[d].spec.__dataclass_fields__["energies"].default is False for d in DRAWS)


@pytest.mark.parametrize("method", DRAWS)
def test_a_draw_forwards_only_its_own_rows_unless_energies_are_asked(method):
    m, r = _run(method)
    assert r.energy_local is None and r.energy_raw is None and r.energy is None
    assert m.rows == r.forward_rows  # every row the model forwarded is counted, and no other
    assert r.calls.sum() > 0 and (r.calls >= r.rounds).all()
    m2, r2 = _run(method, energies=True)
    assert torch.equal(r.samples, r2.samples) and torch.equal(r.log_prob, r2.log_prob)  # the same draws
    assert r2.energy_local.shape == (E, B) and r2.energy_raw.shape == (E, B)
    assert m2.rows == r2.forward_rows == r.forward_rows + E * B * T  # the energy pass: one row per scored position
    assert m2.forwards == m.forwards + E  # one batched pass per epoch
    assert torch.equal(r2.calls, r.calls + 1) and torch.equal(r2.rounds, r.rounds)


@pytest.mark.parametrize("method", DRAWS)
def test_rows_carry_energy_columns_only_when_asked(method):
    from mlmprob.sampling.stream import result_rows

    for energies in (False, True):
        m, r = _run(method, energies=energies)
        text = SimpleNamespace(decode=lambda ids: str(ids.tolist()))
        rows = result_rows(text, r, [("x", c) for c in range(B)], {})
        has = {k for k in ("e_local", "e_raw", "energy_trace") if k in rows[0]}
        assert has == ({"e_local", "e_raw", "energy_trace"} if energies else set())
        if REGISTRY[method].costs:
            assert rows[0]["forward_rows_per_sample"] == r.forward_rows / (E * B)
            assert rows[0]["calls_per_sample"] == float(r.calls[:, 0].double().mean())


def test_mcmc_keeps_its_energies():
    for method in ("mh", "gibbs"):
        _, r = _run(method, burn_in=0)
        assert r.energy_local.shape == (E, B)


@pytest.mark.parametrize("strategy", ["mask_predict", "easy_first"])
def test_mask_predict_through_sample_is_mask_predict(strategy):
    """``sample(method="mask-predict")`` steps :func:`mask_predict` as a kernel: the same fill every epoch, its
    rows counted, one sequential call per iteration."""
    from mlmprob.sampling import mask_predict

    m = Counted(V, T, seed=5)
    ids = torch.zeros(B, T, dtype=torch.long)
    r = sample(m, ids, method="mask-predict", iterations=3, strategy=strategy, epochs=E, generator=torch.Generator())
    want = mask_predict(LookupMLM(V, T, seed=5), ids, 3, strategy=strategy)
    assert all(torch.equal(r.samples[e], want.ids) for e in range(E))
    assert torch.allclose(r.log_prob[-1], want.confidence.sum(-1))
    assert (r.calls == 3).all() and r.forward_rows == E * want.forward_rows == m.rows
