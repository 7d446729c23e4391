"""Mask-predict against brute force, and the sampling driver: result fields, initialisation, JSONL
resume, input errors, CDR-H3 location, plots. (The samplers' exactness is in ``test_sampling.py``.)"""

import math

import pytest
import torch
from sampling_fixtures import exact, gen  # noqa: E402  (tests/ is on sys.path)

from mlmprob import energy
from mlmprob.errors import MLMProbError, PositionsError
from mlmprob.models.exact import LookupMLM
from mlmprob.sampling import find_cdr_h3, mask_predict, sample
from mlmprob.sampling.io import RunFile, read_run

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny tensors: threads only add contention


# --------------------------------------------------------------------------- mask-predict


def _greedy_pass(m, ids, masked):
    x = ids.clone()
    x[masked] = m.mask_id
    lp = torch.log_softmax(m.logits(x).double(), -1)
    conf, tok = lp.max(-1)
    return tok, conf


def test_mask_predict_against_brute_force():
    m = LookupMLM(4, 4, seed=3)
    ids = torch.randint(4, (6, 4), generator=gen(0))
    N = 3
    r = mask_predict(m, ids, iterations=N, positions=[0, 1, 2, 3])
    for b in range(6):
        x = ids[b : b + 1].clone()
        free = torch.ones(1, 4, dtype=torch.bool)
        tok, conf = _greedy_pass(m, x, free)
        x, c = tok.clone(), conf.clone()
        for t in range(1, N):
            k = 4 * (N - t) // N
            low = sorted(range(4), key=lambda i: (float(c[0, i]), i))[:k]
            mask = torch.zeros(1, 4, dtype=torch.bool)
            mask[0, low] = True
            tok, conf = _greedy_pass(m, x, mask)
            x[mask], c[mask] = tok[mask], conf[mask]
        assert torch.equal(r.ids[b], x[0]), b
    assert r.history.shape == (N, 6, 4)


def test_easy_first_against_brute_force_and_clamping():
    m = LookupMLM(3, 4, seed=4)
    ids = torch.randint(3, (4, 4), generator=gen(1))
    r = mask_predict(m, ids, iterations=2, positions=[1, 2, 3], strategy="easy_first")
    assert torch.equal(r.ids[:, 0], ids[:, 0])
    for b in range(4):
        free = torch.tensor([[False, True, True, True]])
        tok, conf = _greedy_pass(m, ids[b : b + 1], free)
        x = ids[b : b + 1].clone()
        x[free] = tok[free]
        order = sorted([1, 2, 3], key=lambda i: (-float(conf[0, i]), i))
        new = x.clone()
        for j, i in enumerate(order):
            mask = torch.zeros(1, 4, dtype=torch.bool)
            mask[0, order[j:]] = True
            t2, _ = _greedy_pass(m, x, mask)
            new[0, i] = t2[0, i]
        assert torch.equal(r.ids[b], new[0]), b


# ------------------------------------------------------------------ driver, I/O, inputs


def test_result_fields_burn_in_thinning_reference():
    m = exact(3, 3)
    ids = torch.randint(3, (6, 3), generator=gen(0))
    r = sample(m, ids, epochs=6, burn_in=2, thin=2, generator=gen(1), reference=ids[0])
    assert r.kept_epochs.tolist() == [3, 5, 7]
    assert r.samples.shape == (3, 6, 3) and torch.equal(r.samples[-1], r.final_ids)
    assert r.energy_local.shape == (8, 6) and r.accept.shape == (8, 6) and r.identity.shape == (8, 6)
    assert ((r.novel <= r.accept) & (r.accept <= 1)).all()
    assert torch.allclose(r.energy_raw[-1], energy(m, r.final_ids, kind="raw"))
    assert 0 < r.novel_rate <= r.accept_rate <= 1 and r.proposals == 8 * 6 * 3


def test_initialisation_modes():
    m = exact(4, 3)
    masked = torch.full((2, 3), m.mask_id)
    r = sample(m, masked, epochs=1, generator=gen(0))  # masks at free positions: greedy fill
    assert (r.samples < 4).all()
    n = 2000
    rnd = sample(
        m, torch.zeros(n, 3, dtype=torch.long), init="random", epochs=1, generator=gen(0), proposal_temperature=0.0
    )  # greedy proposals never move: the state is the random start
    # uniform and independent over the 4 tokens at each position: every (position, token) count is
    # Binomial(n, 1/4); 5 standard deviations each (all 12 at once fail by chance with p < 1e-5)
    counts = torch.stack([torch.bincount(rnd.samples[0, :, t], minlength=4) for t in range(3)]).double()
    assert ((counts - n / 4).abs() < 5 * math.sqrt(n * 0.25 * 0.75)).all()
    pairs = torch.bincount(rnd.samples[0, :, 0] * 4 + rnd.samples[0, :, 1], minlength=16).double()
    assert ((pairs - n / 16).abs() < 5 * math.sqrt(n / 16 * 15 / 16)).all()  # positions drawn independently
    assert not torch.equal(
        rnd.samples,
        sample(
            m, torch.zeros(n, 3, dtype=torch.long), init="random", epochs=1, generator=gen(1), proposal_temperature=0.0
        ).samples,
    )
    g1 = sample(
        m, torch.zeros(1, 3, dtype=torch.long), init="greedy", epochs=1, generator=gen(0), proposal_temperature=0.0
    )
    x = torch.full((1, 3), m.mask_id)
    assert torch.equal(g1.samples[0], m.logits(x).argmax(-1))


def test_jsonl_resume_matches_an_uninterrupted_run(tmp_path):
    m = LookupMLM(3, 4, seed=1)
    ids = torch.randint(3, (20, 4), generator=gen(0))
    kw = dict(burn_in=2, block_size=2, generator=None)
    full = sample(m, ids, epochs=6, **{**kw, "generator": gen(9)})
    path = tmp_path / "run.jsonl"
    sample(m, ids, epochs=2, run_file=RunFile(path), **{**kw, "generator": gen(9)})  # "killed" after 4 epochs
    with path.open("a") as f:
        f.write('{"type": "epoch", "epoch": 4, "kept"')  # a line cut by the kill
    resumed = sample(m, ids, epochs=6, run_file=RunFile(path), **{**kw, "generator": gen(123)})
    assert torch.equal(full.samples, resumed.samples)
    assert torch.equal(full.energy_local, resumed.energy_local) and torch.equal(full.accept, resumed.accept)
    head, recs = read_run(path)
    assert len(recs) == 8 and head["config"]["block_size"] == "Constant(value=2)"
    with pytest.raises(MLMProbError, match="top_p"):
        sample(m, ids, epochs=6, run_file=RunFile(path), top_p=0.9, **{**kw, "generator": gen(9)})


def test_bad_inputs_raise_clear_errors():
    m = exact(3, 3)
    ids = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(MLMProbError, match="method"):
        sample(m, ids, method="hmc", epochs=1)
    with pytest.raises(MLMProbError, match="epochs"):
        sample(m, ids, epochs=0)
    with pytest.raises(MLMProbError, match="shape"):
        sample(m, torch.zeros(3, dtype=torch.long), epochs=1)
    with pytest.raises(PositionsError, match="mask token"):
        sample(m, torch.tensor([[0, 3, 0]]), positions=[0], epochs=1)
    with pytest.raises(MLMProbError, match="order"):
        sample(m, ids, order="r2l", epochs=1)
    with pytest.raises(MLMProbError, match="block size"):
        sample(m, ids, block_size=lambda e: 0, epochs=1)


def test_find_cdr_h3():
    fr = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
    vh = fr + "WGGDGFYAMD" + "YWGQGTLVTVSS"  # trastuzumab: Mason et al. vary the 10 residues after C-S-R
    s, e = find_cdr_h3(vh, "kabat")
    assert vh[s:e] == "WGGDGFYAMDY" and (s, e) == (len(fr), len(fr) + 11)
    s, e = find_cdr_h3(vh)
    assert vh[s:e] == "SRWGGDGFYAMDY"
    with pytest.raises(MLMProbError, match="CDR-H3"):
        find_cdr_h3("DIQMTQSPSSLSASVGDRVTITCRASQ")


def test_plot_writes_png(tmp_path):
    from mlmprob.sampling.plots import plot_traces

    m = exact(3, 3)
    ids = torch.zeros(3, 3, dtype=torch.long)
    r = sample(m, ids, epochs=3, burn_in=1, generator=gen(0), reference=ids)
    out = plot_traces(r, tmp_path / "trace.png")
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_a_gibbs_run_file_resumes(tmp_path):
    """Gibbs has no target temperature: its run file holds null there (strict JSON), read back as NaN."""
    m = LookupMLM(3, 4, seed=2)
    ids = torch.randint(3, (6, 4), generator=gen(1))
    kw = dict(method="gibbs", burn_in=1, block_size=2)
    full = sample(m, ids, epochs=4, generator=gen(3), **kw)
    path = tmp_path / "run.jsonl"
    sample(m, ids, epochs=1, run_file=RunFile(path), generator=gen(3), **kw)  # stopped after 2 epochs
    resumed = sample(m, ids, epochs=4, run_file=RunFile(path), generator=gen(99), **kw)
    assert torch.equal(full.samples, resumed.samples) and torch.equal(full.energy_local, resumed.energy_local)
    assert resumed.target_temperature.isnan().all()
