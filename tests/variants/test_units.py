"""The variant units' reader names what is wrong with the input path in one line."""

import pytest

from mlmprob.errors import MLMProbError
from mlmprob.variants.units import iter_units


def test_a_folder_given_as_the_input_is_named_a_folder(tmp_path):
    with pytest.raises(MLMProbError, match=r"^input '.*' is a folder, not a file$"):
        list(iter_units(tmp_path))


def test_a_missing_input_is_named_missing(tmp_path):
    with pytest.raises(MLMProbError, match=r"^input file '.*' does not exist$"):
        list(iter_units(tmp_path / "nope.csv"))
