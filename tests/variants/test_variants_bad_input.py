"""Red-team, second round: ``score_variants`` given what a notebook passes by mistake: one line naming the
argument, never a silently truncated position or Python's 'object is not iterable'."""

import pytest
import torch

from mlmprob import LookupMLM, MLMProbError, score_variants
from mlmprob.variants.spec import VariantsSpec

WT = torch.tensor([0, 1, 2, 0])


@pytest.fixture(scope="module")
def toy():
    return LookupMLM(3, 4, seed=0)


@pytest.mark.parametrize("pair", [(1.5, 2), (1.0, 2), ("1", 2), (1, 2.0), (True, 2)])
def test_a_position_or_token_that_is_not_an_int_is_refused(toy, pair):
    # (1.5, 2) was scored as a mutation at position 1
    with pytest.raises(MLMProbError, match="variant 0 must be a list of .position, token_id. pairs"):
        score_variants(toy, WT, [[pair]], methods=["wt_marginals"])


def test_int_like_positions_still_count(toy):
    a = score_variants(toy, WT, [[(1, 2)]], methods=["wt_marginals"])["wt_marginals"]
    b = score_variants(toy, WT, [[(torch.tensor(1), torch.tensor(2))]], methods=["wt_marginals"])["wt_marginals"]
    assert torch.equal(a, b)


@pytest.mark.parametrize("methods", [3, 1.5, True])
def test_methods_that_are_not_names_are_one_line(toy, methods):
    with pytest.raises(MLMProbError, match="methods must be a method name or a list of them"):
        VariantsSpec(methods=methods)
    with pytest.raises(MLMProbError, match="methods must be a method name or a list of them"):
        score_variants(toy, WT, [[(1, 2)]], methods=methods)
