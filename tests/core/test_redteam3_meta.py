"""Issue 49 (red team, third round), item 7: a tensor on the ``meta`` device (a shape without values) and a device
mlmprob does not run on are refused by the Python API in one ``MLMProbError``, not torch's RuntimeError or
NotImplementedError."""

import pytest
import torch

import mlmprob
from mlmprob import MLMProbError
from mlmprob.runtime.device import resolve_device


@pytest.fixture(scope="module")
def meta_ids(tiny_bert):
    return tiny_bert.encode(["ACDEFGHIK"]).input_ids.to("meta")


CALLS = {
    "pll": lambda m, ids: mlmprob.pll(m, ids),
    "token_scores": lambda m, ids: mlmprob.token_scores(m, ids),
    "loglik": lambda m, ids: mlmprob.loglik(m, ids),
    "energy": lambda m, ids: mlmprob.energy(m, ids),
    "sample": lambda m, ids: mlmprob.sample(m, ids, generator=torch.Generator()),
    "infill": lambda m, ids: mlmprob.infill(m, ids, [2, 3]),
    "sample_infill": lambda m, ids: mlmprob.sample_infill(m, ids, [2, 3], generator=torch.Generator()),
    "mask_predict": lambda m, ids: mlmprob.mask_predict(m, ids, 2),
    "score_variants": lambda m, ids: mlmprob.score_variants(m, ids, ["C3D"]),
    "pair_conditionals": lambda m, ids: mlmprob.pair_conditionals(m, ids, 2, 3),
}


@pytest.mark.parametrize("name", CALLS)
def test_meta_input_ids_are_one_error(tiny_bert, meta_ids, name):
    with pytest.raises(MLMProbError, match="on the meta device, which holds no values"):
        CALLS[name](tiny_bert, meta_ids)


def test_meta_positions_are_one_error(tiny_bert):
    ids = tiny_bert.encode(["ACDEFGHIK"]).input_ids
    with pytest.raises(MLMProbError, match="positions are on the meta device"):
        mlmprob.pll(tiny_bert, ids, positions=torch.tensor([2, 3], device="meta"))


@pytest.mark.parametrize("device", ["meta", "xla", "hpu:0"])
def test_an_unsupported_device_is_one_error(device, tiny_bert_dir):
    with pytest.raises(MLMProbError, match=f"device '{device}' is not supported: use auto or a device of type cpu"):
        resolve_device(device)
    with pytest.raises(MLMProbError, match="is not supported"):
        mlmprob.load_mlm(str(tiny_bert_dir), device=device)
