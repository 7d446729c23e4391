"""The one rule of positions (docs/positions.md, issue 51 item 4): a function numbers positions in the coordinates of
the input it indexes. ``design`` takes a residue string, so 1-based residue numbers of it (the same numbers as its
``--positions`` and its rows' mutant strings); the functions on token ids take 0-based token indices; and
``word_positions`` / ``token_numbers`` turn one into the other for a model."""

from __future__ import annotations

import re

import pytest
import torch
from conftest import tiny_hf

from mlmprob.designing import design
from mlmprob.positions import token_numbers, word_positions

PARENT = "ACDEFGHIKL"


def _model(name: str):
    if name == "tiny-bert":
        return tiny_hf("bert")
    from mlmprob import load_mlm

    try:
        return load_mlm("antiberty")
    except Exception as e:  # an install without the embedded model
        pytest.skip(f"antiberty not loadable: {e}")


def test_design_positions_are_1_based_residues_of_the_parent():
    r = design(
        tiny_hf("bert"), PARENT, chains=8, steps=12, positions=(2, 3), generator=torch.Generator().manual_seed(0)
    )
    changed = {int(m) for row in r.rows for m in re.findall(r"[A-Z](\d+)[A-Z]", row["mutant"] or "")}
    assert changed and changed <= {2, 3}  # residues 2 and 3 (C, D), never residue 1 (A) nor index 3 (E)
    for row in r.rows:
        assert row["sequence"][0] == "A" and row["sequence"][3:] == PARENT[3:]


@pytest.mark.parametrize("name", ["tiny-bert", "antiberty"])
def test_word_positions_turns_residue_numbers_into_the_token_indices_pll_takes(name):
    mlm = _model(name)
    enc = mlm.encode([PARENT])
    idx = word_positions(enc.word_ids[0], [2, 3])
    one = [mlm.encode([r]) for r in "CD"]  # each residue alone: its one token
    want = [int(e.input_ids[0, word_positions(e.word_ids[0], [1])[0]]) for e in one]
    assert enc.input_ids[0, idx].tolist() == want, name
    back = token_numbers(enc.word_ids[0], enc.input_ids[0], mlm.mask_id)
    assert [back[i] for i in idx] == [2, 3]
