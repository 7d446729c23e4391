"""The default dtype is the weights' own (``weights``): the same numbers on every machine, whatever
``auto`` would pick there (issue 28, item 4)."""

import pytest
import torch
from conftest import save_tiny_bert

import mlmprob
from mlmprob.runtime import device as rdev


@pytest.fixture
def bf16_cpu(monkeypatch):
    """A CPU on which ``auto`` picks bfloat16 (native units, fast measured product)."""
    monkeypatch.delenv("MLMPROB_DTYPE", raising=False)
    monkeypatch.setattr(rdev, "cpu_prefers_bf16", lambda *a, **k: True)
    assert rdev.resolve_dtype("auto", "cpu") == torch.bfloat16


def test_default_is_float32_where_auto_is_bf16(bf16_cpu, tiny_bert_dir):
    ids = ["ACDEFGHIK"]
    default = mlmprob.load_mlm(str(tiny_bert_dir), device="cpu")
    assert default.dtype == torch.float32
    assert mlmprob.load_mlm(str(tiny_bert_dir), device="cpu", dtype="auto").dtype == torch.bfloat16
    exact = mlmprob.load_mlm(str(tiny_bert_dir), device="cpu", dtype="float32")
    assert (
        mlmprob.pll(default, default.encode(ids).input_ids).tolist()
        == mlmprob.pll(exact, exact.encode(ids).input_ids).tolist()
    )


def test_builtin_default_is_float32(bf16_cpu):
    assert mlmprob.load_mlm("en-small", device="cpu").dtype == torch.float32


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_half_checkpoint_computes_in_float32_on_cpu(tmp_path, half):
    import transformers

    (tmp_path / "f32").mkdir()
    d = save_tiny_bert(tmp_path / "f32")
    h = tmp_path / "half"
    transformers.BertForMaskedLM.from_pretrained(str(d), dtype=half).save_pretrained(str(h))
    transformers.BertTokenizer.from_pretrained(str(d)).save_pretrained(str(h))
    assert transformers.BertForMaskedLM.from_pretrained(str(h)).dtype == half  # transformers keeps it
    mlm = mlmprob.load_mlm(str(h), device="cpu")
    assert mlm.dtype == torch.float32
    widened = mlmprob.load_mlm(str(h), device="cpu", dtype="float32")
    assert (
        mlmprob.pll(mlm, mlm.encode(["ACDEF"]).input_ids).tolist()
        == mlmprob.pll(widened, widened.encode(["ACDEF"]).input_ids).tolist()
    )
    assert mlmprob.load_mlm(str(h), device="cpu", dtype="weights").dtype == torch.float32
