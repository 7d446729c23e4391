"""int8 keeps an encoder's first layers in float32 (``int8_float_layers``): which layers, and that it lowers
the error against float32 on a random ESM-2-shaped model of 12 layers (weights of ESM-2's std 0.02; measured
mean error per position 0.0033 nats with the first layer in float32, 0.0041 with it in int8)."""

import pytest
import torch
from conftest import save_esm

from mlmprob import load_mlm, token_scores
from mlmprob.models.precision import Int8Linear, int8_float_layers, int8_supported, quantize_linears

pytestmark = pytest.mark.usefixtures("one_thread")


def test_int8_float_layers_and_skip():
    assert [int8_float_layers(n) for n in (1, 2, 6, 11, 12, 23, 24, 30, 33, 36, 48)] == [
        0,
        0,
        0,
        0,
        1,
        1,
        2,
        2,
        2,
        3,
        4,
    ]
    if not int8_supported():
        pytest.skip("no fbgemm int8 kernels in this torch build")
    seq = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Sequential(torch.nn.Linear(4, 4)), torch.nn.Linear(4, 2))
    assert quantize_linears(seq, (seq[1],)) == 2
    assert isinstance(seq[0], Int8Linear) and isinstance(seq[2], Int8Linear)
    assert type(seq[1][0]) is torch.nn.Linear


@pytest.fixture(scope="module")
def esm12(tmp_path_factory):
    # ESM-2's weight std (transformers' default initializer_range, 0.02), 12 layers
    return save_esm(
        tmp_path_factory.mktemp("esm12"),
        max_positions=66,
        hidden_size=64,
        num_hidden_layers=12,
        num_attention_heads=4,
        intermediate_size=256,
        emb_layer_norm_before=False,
        initializer_range=0.02,
    )


def test_int8_first_layer_float_lowers_error(esm12):
    if not int8_supported():
        pytest.skip("no fbgemm int8 kernels in this torch build")
    ref = load_mlm(str(esm12), device="cpu", dtype="float32")
    q = load_mlm(str(esm12), device="cpu", dtype="int8")
    layers = q.model.esm.encoder.layer
    assert not any(isinstance(m, Int8Linear) for m in layers[0].modules())
    assert all(sum(isinstance(m, Int8Linear) for m in lay.modules()) == 6 for lay in layers[1:])
    assert not any(isinstance(m, Int8Linear) for m in q.model.lm_head.modules())
    g = torch.Generator().manual_seed(0)
    res = ref.proposal_ids
    ids = torch.cat(
        [
            torch.zeros(6, 1, dtype=torch.long),
            res[torch.randint(len(res), (6, 40), generator=g)],
            torch.full((6, 1), 2),
        ],
        1,
    )
    s32 = token_scores(ref, ids)

    def err(m):
        return (token_scores(m, ids).log_prob - s32.log_prob)[s32.positions].abs().mean()

    new = err(q)
    assert quantize_linears(q.model.esm) == 6  # the first layer quantized too: int8 before int8_float_layers
    old = err(q)
    assert 0 < new < old, (float(new), float(old))


@pytest.mark.parametrize("family", ["Bert", "Roberta"])
def test_int8_first_layer_float_bert_roberta(family):
    if not int8_supported():
        pytest.skip("no fbgemm int8 kernels in this torch build")
    import transformers as tf

    from mlmprob.models.precision import INT8, apply_precision

    torch.manual_seed(0)  # test fixture weights
    cfg = getattr(tf, f"{family}Config")(
        vocab_size=30, hidden_size=16, num_hidden_layers=12, num_attention_heads=2, intermediate_size=32
    )
    m = apply_precision(getattr(tf, f"{family}ForMaskedLM")(cfg), "cpu", INT8)
    layers = getattr(m, m.base_model_prefix).encoder.layer
    assert not any(isinstance(x, Int8Linear) for x in layers[0].modules())
    assert all(sum(isinstance(x, Int8Linear) for x in lay.modules()) == 6 for lay in layers[1:])
