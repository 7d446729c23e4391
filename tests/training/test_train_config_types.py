"""Red-team, second round: TrainConfig given the wrong type: one line naming the field (a string or None was
Python's comparison or int() error; 1.5 layers and lr=nan, a run of NaN weights, went through)."""

import pytest

from mlmprob import MLMProbError
from mlmprob.training import TrainConfig


@pytest.mark.parametrize("name", ["hidden_size", "num_layers", "max_steps", "batch_size", "warmup_steps", "seed"])
@pytest.mark.parametrize("value", [None, "x", 1.5, float("nan"), True])
def test_a_count_must_be_an_integer(name, value):
    with pytest.raises(MLMProbError, match=f"{name} must be an integer, got"):
        TrainConfig(**{name: value})


@pytest.mark.parametrize("name", ["lr", "dropout", "weight_decay", "grad_clip", "mask_rate"])
@pytest.mark.parametrize("value", [None, "x", float("nan"), float("inf"), True])
def test_a_rate_must_be_a_finite_number(name, value):
    with pytest.raises(MLMProbError, match=f"{name} must be a finite number, got"):
        TrainConfig(**{name: value})


@pytest.mark.parametrize("split", [None, 1.0, "abc", (1.0, 0.0), ("1", 0, 0)])
def test_mask_split_must_be_three_numbers(split):
    with pytest.raises(MLMProbError, match="mask_split must be three"):
        TrainConfig(mask_split=split)


def test_good_values_still_read():
    c = TrainConfig(lr=1, dropout=0, mask_split=[1, 0, 0], warmup_steps=0)
    assert c.mask_split == (1.0, 0.0, 0.0) and TrainConfig.from_dict(c.to_dict()) == c
