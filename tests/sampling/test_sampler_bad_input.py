"""Red-team, second round: the sampling API given what a notebook passes by mistake (a seed number as the generator,
a huge iteration count, a string temperature, ``order=None``): one MLMProbError naming the argument, before any
long work."""

import pytest
import torch

import mlmprob
from mlmprob import ExactMLM, MLMProbError
from mlmprob.sampling.spec import SamplerSpec


@pytest.fixture(scope="module")
def toy():
    return ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))


IDS = torch.zeros(2, 3, dtype=torch.long)


@pytest.mark.parametrize("generator", [3, "seed", torch.Generator().manual_seed(0).get_state()])
@pytest.mark.parametrize("method", ["mh", "ancestral", "unmask"])
def test_a_generator_that_is_not_one_is_named(toy, method, generator):
    # it was torch's "rand() received an invalid combination of arguments" from inside a kernel
    with pytest.raises(MLMProbError, match=r"generator must be a torch.Generator, got"):
        mlmprob.sample(toy, IDS, method=method, epochs=1, generator=generator)


def test_the_message_says_how_to_make_one_from_a_seed(toy):
    with pytest.raises(MLMProbError, match=r"generator=torch.Generator\(\).manual_seed\(3\)"):
        mlmprob.sample(toy, IDS, epochs=1, generator=3)


def test_mask_predict_takes_at_most_the_specs_iterations(toy):
    # mask_predict(mlm, ids, 10**12) ran (and kept a copy of the ids per round) until killed
    with pytest.raises(MLMProbError, match="iterations must be at most 10,000"):
        mlmprob.mask_predict(toy, IDS, 10**12)
    with pytest.raises(MLMProbError, match="iterations must be a positive integer"):
        mlmprob.mask_predict(toy, IDS, True)
    assert mlmprob.mask_predict(toy, IDS, 2).history.shape[0] == 2


def test_mask_predict_refuses_an_unknown_keyword_naming_the_valid_ones(toy):
    # it was Python's TypeError ("got an unexpected keyword argument"), unlike every other entry point
    with pytest.raises(MLMProbError) as e:
        mlmprob.mask_predict(toy, IDS, 2, stratgy="easy_first")
    assert str(e.value) == (
        "unknown setting 'stratgy' of mask_predict; the settings are iterations, positions, strategy"
    )
    with pytest.raises(MLMProbError, match=r"unknown settings 'a', 'b' of mask_predict"):
        mlmprob.mask_predict(toy, IDS, 2, a=1, b=2)


def test_the_sampler_spec_is_public_in_its_package():
    import mlmprob.sampling

    assert mlmprob.sampling.SamplerSpec is SamplerSpec
    assert "SamplerSpec" in mlmprob.sampling.__all__ and "SamplerSpec" in dir(mlmprob.sampling)
    from mlmprob.sampling import SamplerSpec as imported

    assert type(imported(method="ancestral")).__name__ == "AncestralSpec"


@pytest.mark.parametrize("name", ["proposal_temperature", "top_p"])
@pytest.mark.parametrize("value", [None, "0.5", [], True])
@pytest.mark.parametrize("method", ["mh", "gibbs", "ancestral", "speculative", "unmask", "adaptive"])
def test_proposal_settings_must_be_numbers(method, name, value):
    # None / "0.5" / [] were "'>=' not supported between instances of ..."; True was taken as 1.0
    with pytest.raises(MLMProbError, match=f"{name} must be a number"):
        SamplerSpec(method=method, **{name: value})


@pytest.mark.parametrize("name", ["anneal", "temperature_floor"])
@pytest.mark.parametrize("value", [None, "0.1", []])
def test_mh_annealing_settings_must_be_numbers(name, value):
    with pytest.raises(MLMProbError, match=f"{name} must be a number"):
        SamplerSpec(method="mh", **{name: value})


def test_an_infinite_temperature_floor_is_refused_by_the_spec():
    # it was accepted and refused only after the chains were initialised, at epoch 0
    with pytest.raises(MLMProbError, match="temperature_floor"):
        SamplerSpec(method="mh", anneal=0.1, temperature_floor=float("inf"))


@pytest.mark.parametrize("method", ["ancestral", "speculative"])
def test_order_none_is_refused_by_the_spec(method):
    # it was torch's "Could not infer dtype of NoneType" when the draw began
    with pytest.raises(MLMProbError, match="order must be one of .* got None"):
        SamplerSpec(method=method, order=None)


@pytest.mark.parametrize("reference", ["AAA", ["AAA"], [[0, 1], [2]]])
def test_a_reference_that_is_not_token_ids_is_named(toy, reference):
    # it was torch's "new(): invalid data type 'str'"
    with pytest.raises(MLMProbError, match=r"reference must be token ids \[L\] or \[B, L\]"):
        mlmprob.sample(toy, IDS, epochs=1, reference=reference, generator=torch.Generator().manual_seed(0))
