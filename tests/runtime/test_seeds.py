"""The one seed derivation (``runtime.seeds``): every purpose's seeds pinned to the values the six former
copies produced (stored outputs and resumable runs were made with them), and every caller going through it."""

import pytest

from mlmprob.errors import MLMProbError
from mlmprob.runtime.seeds import PURPOSES, derive_seed, seeded_generator

# values computed with the former per-module derivations (sampling/stream.record_seed,
# likelihood/records.record_generator, variants/chain.site_orders, commands/joints_job._pair_generator,
# experiments/cdr_h3_runner._generator, training/masking.derive_seed)
PINNED = [
    ((0, "record", "seq1"), 6289551396170010969),
    ((7, "record", "P0 x"), 3926488651875995568),
    ((0, "loglik", "ACD"), 620537770),
    ((3, "loglik", "MKV"), 380922967),
    ((5, "variant", [3, 7, 9]), 3361187477),
    ((5, "variant", (3, 7, 9)), 3361187477),  # the sites as a list, whatever sequence they come in
    ((0, "pair", 1, 2), 100005),
    ((11, "pair", 3, 40), 11300082),
    ((0, "cdr-h3", "t1/mh-local"), 4201966108),
    ((2**61, "cdr-h3", "x"), 2305843011576927875),  # reduced mod 2**62
    ((0, "stream", "mask", 3), 5480703136574778321),
    ((5, "stream", "english-eval", "wiki"), 2730965980337632241),
]


@pytest.mark.parametrize("args,want", PINNED)
def test_derived_seeds_are_pinned(args, want):
    assert derive_seed(*args) == want
    assert seeded_generator(*args).initial_seed() == want


def test_every_purpose_is_pinned_and_unknown_ones_are_refused():
    assert {a[1] for a, _ in PINNED} == set(PURPOSES)
    with pytest.raises(MLMProbError, match="unknown seed purpose 'records'"):
        derive_seed(0, "records", "x")


def test_callers_use_the_one_derivation():
    from mlmprob.likelihood.records import record_generator
    from mlmprob.sampling.stream import record_seed
    from mlmprob.training.masking import derive_seed as training_seed
    from mlmprob.training.masking import generator_for
    from mlmprob.variants.chain import site_orders

    assert record_seed(7, "P0 x") == 3926488651875995568
    assert record_generator(3, "MKV").initial_seed() == 380922967
    assert training_seed(0, "mask", 3) == generator_for(0, "mask", 3).initial_seed() == 5480703136574778321
    assert site_orders([1, 2, 3, 4], 2, 5) == [[3, 4, 1, 2], [1, 2, 4, 3]]  # the orders drawn before
