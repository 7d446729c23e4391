"""Each precision path against float32 on tiny random-weight models (BERT, RoBERTa, ESM-2, DistilBERT).

The tiny models have weights of std 0.15 (log-probabilities down to about -5). Measured on them (max over
3 families): per-token error 0.086 (int8), 0.027 (bfloat16), 0.0038 (float16) nats, relative PLL error
0.0046 / 0.0021 / 0.00015. Tolerances: about twice those; and the PLL rank order kept (Spearman >= 0.95)."""

import copy

import pytest
import torch
from conftest import tiny_hf

from mlmprob import load_mlm, token_scores
from mlmprob.errors import ModelLoadError
from mlmprob.models.hf import HFMaskedLM
from mlmprob.models.precision import INT8, Int8Linear, apply_precision, int8_supported
from mlmprob.runtime.device import resolve_dtype

pytestmark = pytest.mark.usefixtures("one_thread")

TOL = {torch.int8: 0.2, torch.bfloat16: 0.06, torch.float16: 0.01}  # per-token max, nats
REL_PLL = {torch.int8: 0.01, torch.bfloat16: 0.005, torch.float16: 0.0005}  # |PLL - PLL32| / |PLL32|
INIT = 0.15


def _ids(mlm, n=12, L=14, seed=0):
    g = torch.Generator().manual_seed(seed)
    res = mlm.proposal_ids
    body = res[torch.randint(len(res), (n, L), generator=g)]
    cls = torch.full((n, 1), mlm.tokenizer.bos_id) if hasattr(mlm.tokenizer, "bos_id") else None
    eos = torch.full((n, 1), mlm.tokenizer.eos_id) if hasattr(mlm.tokenizer, "eos_id") else None
    return torch.cat([t for t in (cls, body, eos) if t is not None], 1)


def _in(mlm, dtype):
    out = HFMaskedLM(
        apply_precision(copy.deepcopy(mlm.model), "cpu", dtype),
        mlm.tokenizer,
        name=mlm.name,
        proposal_ids=mlm.proposal_ids.tolist(),
        max_length=mlm.max_length,
    )
    return out


def _spearman(a, b):
    ra, rb = a.argsort().argsort().double(), b.argsort().argsort().double()
    return float(torch.corrcoef(torch.stack([ra, rb]))[0, 1])


@pytest.mark.parametrize("kind", ["bert", "roberta", "distilbert"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.bfloat16, torch.float16])
def test_precision_matches_float32(kind, dtype):
    if dtype == INT8 and not int8_supported():
        pytest.skip("no fbgemm int8 kernels in this torch build")
    ref = tiny_hf(kind, init=INIT)
    ids = _ids(ref)
    s32 = token_scores(ref, ids)
    low = _in(ref, dtype)
    assert low.dtype == dtype
    s = token_scores(low, ids)
    err = (s.log_prob - s32.log_prob)[s32.positions].abs()
    assert float(err.max()) < TOL[dtype], (kind, dtype, float(err.max()))
    assert float(err.max()) > 0  # the path really ran in another precision
    assert float(((s.pll - s32.pll).abs() / s32.pll.abs()).max()) < REL_PLL[dtype]
    assert _spearman(s.pll, s32.pll) >= 0.95


def test_int8_quantizes_encoder_not_head():
    if not int8_supported():
        pytest.skip("no fbgemm int8 kernels in this torch build")
    m = _in(tiny_hf("bert"), torch.int8)
    enc = [x for x in m.model.bert.modules() if isinstance(x, Int8Linear)]
    assert len(enc) == 2 * 6  # q, k, v, attention out, intermediate, output per layer
    assert not any(isinstance(x, Int8Linear) for x in m.model.cls.modules())
    assert all(p.dtype == torch.float32 for p in m.model.parameters())
    assert "int8" in repr(m)


def test_int8_esm_dir_through_load_mlm(esm_dir, esm):
    if not int8_supported():
        pytest.skip("no fbgemm int8 kernels in this torch build")
    q = load_mlm(str(esm_dir), device="cpu", dtype="int8")
    ids = esm.encode(["ACDEFGHIK", "LMNPQRSTV"]).input_ids
    a, b = token_scores(esm, ids), token_scores(q, ids)
    assert q.dtype == torch.int8
    assert any(isinstance(x, Int8Linear) for x in q.model.esm.encoder.modules())
    # the shared ESM fixture has weights of std 0.5 (log-probabilities down to -12): measured max 0.32 nats
    err = (a.log_prob - b.log_prob)[a.positions].abs()
    assert 0 < float(err.max()) < 0.6


def test_int8_name_and_refusals():
    assert resolve_dtype("int8") == torch.int8
    with pytest.raises(ModelLoadError, match="x86 CPUs only"):
        apply_precision(torch.nn.Linear(2, 2), "meta", torch.int8)
    with pytest.raises(ModelLoadError, match="no linear layers"):
        apply_precision(torch.nn.Sequential(torch.nn.ReLU()), "cpu", torch.int8)
