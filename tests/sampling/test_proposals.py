"""The one proposal function (``sampling.proposals.proposal_log_probs``): its nucleus rule checked against
an exact enumeration, ties going to the lower token id, and the infilling baselines using the same
function (they kept a different nucleus on ties before)."""

import itertools
from fractions import Fraction

import pytest
import torch

from mlmprob import ExactMLM
from mlmprob.infilling import sample_infill
from mlmprob.infilling.baselines import SamplingConfig, proposal_logp
from mlmprob.sampling import ProposalConfig, proposal_log_probs
from mlmprob.sampling.proposals import nucleus


def gen(seed):
    return torch.Generator().manual_seed(seed)


def exact_nucleus(probs: list[Fraction], top_p: Fraction) -> set[int]:
    """The documented rule in exact arithmetic: rank by decreasing probability, ties by increasing id, and
    keep the shortest prefix whose mass reaches ``top_p``."""
    ranked = sorted(range(len(probs)), key=lambda v: (-probs[v], v))
    kept, mass = set(), Fraction(0)
    for v in ranked:
        kept.add(v)
        mass += probs[v]
        if mass >= top_p:
            break
    return kept


def test_nucleus_matches_exact_enumeration_with_ties():
    # every row of 4 probabilities in sixteenths (ties everywhere) at every top_p in sixteenths: the mass of a
    # prefix often equals top_p exactly, where float64 rounding of the running sum used to decide
    rows = [c for c in itertools.product(range(1, 14), repeat=4) if sum(c) == 16]
    logits = torch.tensor(rows, dtype=torch.float64).log()
    for k in range(1, 17):
        top_p = Fraction(k, 16)
        lp = proposal_log_probs(logits, config=ProposalConfig(top_p=float(top_p)))
        via_infill = proposal_logp(logits, SamplingConfig(top_p=float(top_p)))
        assert torch.equal(lp, via_infill)
        for row, got in zip(rows, lp):
            kept = exact_nucleus([Fraction(c, 16) for c in row], top_p)
            assert set(torch.isfinite(got).nonzero()[:, 0].tolist()) == kept, (row, top_p)
            total = sum(row[v] for v in kept)
            want = torch.tensor([row[v] / total if v in kept else 0.0 for v in range(4)], dtype=torch.float64)
            assert torch.allclose(got.exp(), want, atol=1e-12)


def test_ties_go_to_the_lower_id_in_samplers_and_infill_baselines():
    # 50 equal tokens: an unstable sort (the infill baselines' old copy) kept a scrambled half
    flat = torch.zeros(2, 50)
    for lp in (
        proposal_log_probs(flat, config=ProposalConfig(top_p=0.5)),
        proposal_logp(flat.double().log_softmax(-1), SamplingConfig(top_p=0.5)),
        proposal_logp(flat.double().log_softmax(-1), SamplingConfig(temperature=0.5, top_p=0.5)),
        nucleus(flat.double().log_softmax(-1), 0.5),
    ):
        assert torch.isfinite(lp).tolist() == [[v < 25 for v in range(50)]] * 2
    greedy = proposal_log_probs(torch.tensor([[0.0, 2.0, 1.0, 2.0]]), config=ProposalConfig(temperature=0.0))
    assert greedy.exp().tolist() == [[0.0, 1.0, 0.0, 0.0]]  # the arg-max: the lower of the tied ids


def test_sampling_baseline_draws_its_nucleus_from_the_lower_tied_ids():
    # one position, 40 equally likely fills: the nucleus-0.5 baseline can only return ids 0..19, all of them
    m = ExactMLM(torch.zeros(40))
    out = sample_infill(m, [40], [0], num_samples=40, top_p=0.5, generator=gen(0))
    assert sorted(c.tokens[0] for c in out) == list(range(20))


def test_infill_baseline_config_is_the_samplers_proposal():
    assert SamplingConfig(0.5, None).proposal == ProposalConfig(0.5, 1.0)
    assert SamplingConfig(1.0, 0.9).proposal == ProposalConfig(1.0, 0.9)
    with pytest.raises(Exception, match="temperature"):
        SamplingConfig(temperature=0.0)  # the baselines draw without replacement: no greedy
