"""Red-team, second round: ``infill`` given text, None or a string of positions: one line naming the argument
(it was torch's 'new(): invalid data type' or 'Could not infer dtype of NoneType')."""

import pytest
import torch

from mlmprob import ExactMLM, MLMProbError, infill
from mlmprob.errors import PositionsError


@pytest.fixture(scope="module")
def toy():
    return ExactMLM(torch.zeros(3, 3, 3))


@pytest.mark.parametrize("ids", ["ACD", ["ACD"], None, [[0, 1], [2]]])
def test_input_ids_that_are_not_ids_are_named(toy, ids):
    with pytest.raises(MLMProbError, match="input_ids must be integer token ids"):
        infill(toy, ids, [1], method="standard")


@pytest.mark.parametrize("positions", ["1", None, [1, None]])
def test_positions_that_are_not_indices_are_named(toy, positions):
    with pytest.raises(PositionsError, match="positions must be a list of integer token indices"):
        infill(toy, [0, 1, 2], positions, method="standard")


def test_good_input_still_fills(toy):
    assert len(infill(toy, [0, 1, 2], [1], method="standard", beam_size=2)) == 2
