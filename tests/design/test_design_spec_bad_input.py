"""Red-team, second round: DesignSpec's sequence fields given a number: one line naming the field (it was
Python's "'int' object is not iterable" from the spec's normalisation)."""

import pytest

from mlmprob import MLMProbError
from mlmprob.designing.spec import DesignSpec


@pytest.mark.parametrize("name", ["positions", "allowed", "forbid", "require"])
@pytest.mark.parametrize("value", [5, 1.5, True])
def test_a_number_where_a_sequence_is_needed_is_named(name, value):
    with pytest.raises(MLMProbError, match=f"{name} must be a tuple or list, got"):
        DesignSpec(**{name: value})


def test_sequences_still_read():
    s = DesignSpec(positions=[1, 2], allowed=[(1, "AG")], forbid=["NG"], require=("C",))
    assert (s.positions, s.allowed, s.forbid, s.require) == ((1, 2), ((1, "AG"),), ("NG",), ("C",))
