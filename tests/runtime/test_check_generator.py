"""Red-team, second round: every API entry that takes a ``generator`` refuses one that is not a CPU torch.Generator
in one line (runtime.seeds.check_generator), before it draws: it was torch's message from deep inside a kernel."""

import pytest
import torch

import mlmprob
from mlmprob import ExactMLM, MLMProbError
from mlmprob.runtime.seeds import check_generator


@pytest.fixture(scope="module")
def toy():
    return ExactMLM(torch.randn(3, 3, 3, generator=torch.Generator().manual_seed(0)))


CALLS = {
    "loglik": lambda m, g: mlmprob.loglik(m, torch.zeros(1, 3, dtype=torch.long), generator=g),
    "sample_infill": lambda m, g: mlmprob.sample_infill(m, [0, 0, 0], [1], generator=g),
    "design": lambda m, g: mlmprob.design(mlmprob.load_mlm("antiberty"), "EVQLV", steps=1, chains=1, generator=g),
}


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("generator", [7, "seed", object()])
def test_a_generator_that_is_not_one_is_named(toy, name, generator):
    with pytest.raises(MLMProbError, match="generator must be a torch.Generator, got"):
        CALLS[name](toy, generator)


def test_a_generator_of_another_device_is_named():
    class Elsewhere:  # what a torch.Generator(device="cuda") answers (no GPU needed for the check)
        device = torch.device("cuda", 0)

    g = torch.Generator()
    assert check_generator(g) is g
    with pytest.raises(MLMProbError, match="must be a CPU torch.Generator .* got one on cuda:0"):
        check_generator(type("G", (torch.Generator,), {"device": property(lambda s: Elsewhere.device)})())
