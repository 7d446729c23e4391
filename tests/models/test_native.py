"""The embedded models built without transformers (mlmprob.models.native) are transformers' models: the same
parameters under the same names, and bit for bit the same logits under the fused forward, in every precision; and
loading one imports no transformers."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
import torch

from mlmprob.models.antibody import load_antiberty, load_sapiens
from mlmprob.models.native import MaskedLM

LOADERS = {"antiberty": load_antiberty, "sapiens-vh": lambda **kw: load_sapiens("vh", **kw)}


def _have(name: str) -> bool:
    return importlib.util.find_spec(name.split("-")[0]) is not None


def _pair(name: str, dtype=None):
    """The model built natively and as transformers' class, both run by the fused forward."""
    load = LOADERS[name]
    native = load(dtype=dtype)
    hf = load(dtype=dtype, fused=False)
    hf.__init__(
        hf.model,
        hf.tokenizer,
        name=hf.name,
        proposal_ids=hf.proposal_ids.tolist(),
        max_length=hf.max_length,
        fused=True,
    )  # transformers' model under the fused forward
    return native, hf


def _ids(mlm) -> torch.Tensor:
    enc = mlm.encode(["EVQLVESGGGLVQPGGSLRLSCAAS", "QVQLQESG"])
    ids = enc.input_ids.clone()
    ids[0, 3] = mlm.mask_id
    return ids


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_same_parameters_under_the_same_names(name):
    if not _have(name):
        pytest.skip(f"{name}'s package is not installed")
    native, hf = _pair(name)
    assert isinstance(native.model, MaskedLM) and not isinstance(hf.model, MaskedLM)
    theirs = hf.model.state_dict()
    mine = native.model.state_dict()
    assert set(mine) <= set(theirs), set(mine) - set(theirs)
    assert set(theirs) - set(mine) <= {k for k in theirs if k.endswith(("position_ids", "token_type_ids"))}
    for k, v in mine.items():
        assert torch.equal(v, theirs[k]), k
    assert native.vocab_size == hf.vocab_size and native.max_length == hf.max_length


@pytest.mark.parametrize("dtype", [None, torch.bfloat16, "int8"])
@pytest.mark.parametrize("name", sorted(LOADERS))
def test_logits_bit_for_bit(name, dtype):
    if not _have(name):
        pytest.skip(f"{name}'s package is not installed")
    if dtype == "int8":
        from mlmprob.models.precision import INT8, int8_supported

        if not int8_supported():
            pytest.skip("no int8 kernels here")
        dtype = INT8
    native, hf = _pair(name, dtype)
    ids = _ids(native)
    assert torch.equal(native.logits(ids), hf.logits(ids))
    rows, cols = torch.tensor([0, 0, 1]), torch.tensor([3, 5, 2])
    assert torch.equal(native.logits_at(ids, rows, cols), hf.logits_at(ids, rows, cols))


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_close_to_transformers_own_forward(name):
    """Against transformers' own code (not the fused forward): the same function, to float32 rounding."""
    if not _have(name):
        pytest.skip(f"{name}'s package is not installed")
    native = LOADERS[name]()
    plain = LOADERS[name](fused=False)
    ids = _ids(native)
    torch.testing.assert_close(native.logits(ids), plain.logits(ids), atol=1e-4, rtol=1e-4)
    assert not torch.equal(native.model(ids).logits, torch.zeros(1))  # the module's own forward runs


def test_loading_the_default_model_imports_no_transformers():
    code = "import sys, mlmprob; mlmprob.load_mlm('antiberty'); print('transformers' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_fused_off_builds_transformers_class(monkeypatch):
    monkeypatch.setenv("MLMPROB_FUSED", "0")
    mlm = load_antiberty()
    assert type(mlm.model).__name__ == "BertForMaskedLM" and not mlm.fused
