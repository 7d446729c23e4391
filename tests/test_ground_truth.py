"""The ground-truth experiment: exact helpers against enumeration, and a tiny end-to-end run."""

import json

import pytest
import torch

from conftest import strict_json, strict_jsonl

from mlmprob import MLMProbError
from mlmprob.experiments.ground_truth import (GroundTruthConfig, adjacent_equal, all_states, empirical, kl, run,
                                              state_index, true_pair_joint, tv)
from mlmprob.experiments.ground_truth_report import write_report
from mlmprob.synthetic import make_language


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


TINY = dict(vocab_size=3, length=4, couplings=(1.0,), n_train=400, n_heldout=40, steps=40, eval_every=20,
            n_pairs=4, n_gaps=4, gap_lengths=(2,), chains=16, sample_epochs=4, curve_coupling=1.0,
            curve_steps=(20, 40), masking_rates=(0.25, 0.5), masking_n_train=100, masking_steps=20)


def test_tiny_run_resumes_and_reports(tmp_path):
    cfg = GroundTruthConfig(**TINY)
    out, runs = tmp_path / "out", tmp_path / "runs"
    res = run(cfg, out, runs, progress=False, log=lambda *_: None)
    units = set(res.done)
    assert {"coupling/J1/train", "coupling/J1/pairs", "coupling/J1/infill-k2", "coupling/J1/samplers",
            "curve/step20/pairs", "curve/step40/infill-k2", "masking/r0.25-static/train",
            "masking/r0.5-dynamic/train", "masking/r0.5-dynamic/pairs", "masking/r0.25-static/samplers",
            "curve/step20/samplers"} <= units
    # the step curve's last point is the same model as the coupling run: identical numbers
    assert res.done["curve/step40/pairs"]["kl"] == res.done["coupling/J1/pairs"]["kl"]
    s = res.done["coupling/J1/samplers"]
    for m in ("mh", "gibbs"):
        assert 0 <= s[m]["tv_truth"] <= 1 and len(s[m]["stat_tv"]) == 4
    assert s["gibbs"]["accept_rate"] == 1.0
    infill = res.done["coupling/J1/infill-k2"]["methods"]
    # beam search on the exact conditionals with a beam as wide as V**k... here beam 5 < 9, but every regret >= 0
    assert all(v["regret"] >= -1e-9 for v in infill.values())
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(strict_jsonl(out / "results.jsonl")) == len(lines)
    strict_json((out / "config.json").read_text())
    run(cfg, out, runs, progress=False, log=lambda *_: None)  # resumes: nothing redone
    assert (out / "results.jsonl").read_text().splitlines() == lines
    report = write_report(out).read_text()
    for title in ("Unary conditionals", "Pair joints", "Samplers", "Infilling", "training steps", "Masking rate",
                  "Answers"):
        assert title in report
    for fig in ("fig_samplers.png", "fig_training.png", "fig_masking.png", "fig_pairs.png", "fig_infill.png"):
        assert (out / fig).is_file()
    with pytest.raises(MLMProbError, match="different configuration"):
        run(GroundTruthConfig(**{**TINY, "n_pairs": 5}), out, runs, progress=False)
    assert json.loads((out / "config.json").read_text())["n_pairs"] == 4
