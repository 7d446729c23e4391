"""mlmprob's fused forward (mlmprob.models.fused) against transformers' own code, for ESM-2, BERT, RoBERTa.

3-layer random-weight models (ESM-2: rotary, token dropout; 4 heads of 8): the same logits as transformers'
in float32 (rounding only), and in bfloat16 / int8 an error against float32 no larger than transformers'
own in that precision (plus rounding); padding, masked inputs (token dropout), few reads (the last layer
at the read positions only) and many reads; weights changed in place are followed.
"""

import copy
import warnings

import pytest
import torch
from conftest import TOKENS, tiny_hf, tiny_tokenizer

from mlmprob import token_scores
from mlmprob.models import fused
from mlmprob.models.hf import HFMaskedLM, fused_default
from mlmprob.models.precision import INT8, Int8Linear, apply_precision, int8_reduce_range, int8_supported

pytestmark = pytest.mark.usefixtures("one_thread")
MASK, PAD = TOKENS.index("<mask>"), TOKENS.index("<pad>")


def _esm(layers=3, seed=0, kind="esm"):
    import transformers as tf

    torch.manual_seed(seed)  # test fixture weights
    common = dict(
        vocab_size=len(TOKENS),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=64,
        pad_token_id=PAD,
        initializer_range=0.3,
    )
    if kind == "bert":
        return tf.BertForMaskedLM(
            tf.BertConfig(
                max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **common
            )
        ).eval()
    if kind == "roberta":
        return tf.RobertaForMaskedLM(
            tf.RobertaConfig(
                max_position_embeddings=66,
                type_vocab_size=1,
                hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0,
                **common,
            )
        ).eval()
    cfg = tf.EsmConfig(
        max_position_embeddings=66,
        position_embedding_type="rotary",
        mask_token_id=MASK,
        token_dropout=True,
        emb_layer_norm_before=False,
        **common,
    )
    return tf.EsmForMaskedLM(cfg).eval()


FAMILIES = ["esm", "bert", "roberta"]


def _pair(model, dtype=None):
    """The same weights behind two wrappers: transformers' forward and the fused one."""
    model = model if dtype is None else apply_precision(copy.deepcopy(model), "cpu", dtype)
    tok = tiny_tokenizer(64)
    hf = HFMaskedLM(model, tok, name="esm-hf", proposal_ids=tok.residue_ids, fused=False)
    fu = HFMaskedLM(model, tok, name="esm-fused", proposal_ids=tok.residue_ids, fused=True)
    return hf, fu


def _batch(n=6, L=20, seed=0):
    """Rows of residues with <cls>/<sep>, the last two rows right-padded, some positions masked."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, len(TOKENS), (n, L), generator=g)
    ids[:, 0], ids[:, -1] = 0, 2
    ids[-1, 12:] = PAD
    ids[-1, 11] = 2
    ids[-2, 16:] = PAD
    ids[-2, 15] = 2
    ids[0, 3] = ids[1, 5] = ids[1, 6] = ids[-1, 4] = MASK
    return ids


@pytest.mark.parametrize("kind", FAMILIES)
def test_fused_is_used(kind):
    hf, fu = _pair(_esm(kind=kind))
    assert fu._fused is not None and hf._fused is None
    assert tiny_hf("distilbert")._fused is None  # no fused forward for DistilBERT: transformers' code runs


@pytest.mark.parametrize("kind", FAMILIES)
@pytest.mark.parametrize("reads", ["few", "many", "all"])
def test_fused_matches_transformers_float32(reads, kind):
    hf, fu = _pair(_esm(kind=kind))
    ids = _batch()
    if reads == "all":
        a, b = hf.logits(ids), fu.logits(ids)
        keep = ids != PAD
        a, b = a[keep], b[keep]
    else:
        n = ids.shape[0]
        rows = torch.arange(n) if reads == "few" else torch.arange(n).repeat_interleave(8)
        cols = torch.tensor([3, 5, 7, 4, 9, 2]) if reads == "few" else torch.arange(1, 9).repeat(n)
        a, b = hf.logits_at(ids, rows, cols), fu.logits_at(ids, rows, cols)
    assert a.abs().max() > 1  # discriminating logits
    assert float((a - b).abs().max()) < 2e-5, float((a - b).abs().max())


@pytest.mark.parametrize("kind", FAMILIES)
def test_fused_hidden_states_and_scores_match(kind):
    hf, fu = _pair(_esm(kind=kind))
    ids = _batch()
    rows, cols = torch.arange(ids.shape[0]).repeat_interleave(3), torch.tensor([1, 2, 3] * ids.shape[0])
    assert torch.allclose(hf.hidden_at(ids, rows, cols), fu.hidden_at(ids, rows, cols), atol=2e-5)
    s_hf, s_fu = token_scores(hf, ids[:4]), token_scores(fu, ids[:4])
    assert torch.allclose(s_hf.pll, s_fu.pll, atol=1e-4)


@pytest.mark.parametrize("kind", FAMILIES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, INT8])
def test_fused_low_precision_error_no_larger(dtype, kind):
    if dtype == INT8 and not int8_supported():
        pytest.skip("no fbgemm int8 kernels in this torch build")
    model = _esm(kind=kind)
    ref, _ = _pair(model)
    hf, fu = _pair(model, dtype)
    ids = _batch()
    rows, cols = torch.arange(ids.shape[0]), torch.tensor([3, 5, 7, 4, 9, 2])
    true = ref.logits_at(ids, rows, cols)
    e_hf = float((hf.logits_at(ids, rows, cols) - true).abs().max())
    e_fu = float((fu.logits_at(ids, rows, cols) - true).abs().max())
    assert e_fu > 0 and e_hf > 0  # both really ran in the lower precision
    assert e_fu <= 1.5 * e_hf + 0.01, (e_fu, e_hf)


@pytest.mark.parametrize("kind", FAMILIES)
def test_the_gpu_half_precision_path_error_no_larger(kind, monkeypatch):
    """What a GPU runs for a bfloat16 model (attention in bfloat16, ESM's rotary as one complex product:
    ``half_attention`` and thread invariance off), forced on the CPU: its error against float32 stays within
    transformers' own (whose attention runs in bfloat16 too), and the knob really changes the computation."""
    monkeypatch.setenv("MLMPROB_THREAD_INVARIANT", "0")
    model = _esm(kind=kind)
    ref, _ = _pair(model)
    hf, fu = _pair(model, torch.bfloat16)
    ids = _batch()
    rows, cols = torch.arange(ids.shape[0]), torch.tensor([3, 5, 7, 4, 9, 2])
    true = ref.logits_at(ids, rows, cols)
    wide = fu.logits_at(ids, rows, cols)
    fu._fused.half_attention = True
    half = fu.logits_at(ids, rows, cols)
    e_hf = float((hf.logits_at(ids, rows, cols) - true).abs().max())
    e_half = float((half - true).abs().max())
    assert not torch.equal(half, wide)
    assert e_half > 0 and e_half <= 1.5 * e_hf + 0.01, (e_half, e_hf)


@pytest.mark.parametrize("kind", FAMILIES)
def test_fused_follows_weights_changed_in_place(kind):
    model = _esm(kind=kind)
    hf, fu = _pair(model)
    ids = _batch()
    rows, cols = torch.arange(ids.shape[0]), torch.tensor([3, 5, 7, 4, 9, 2])
    before = fu.logits_at(ids, rows, cols)
    with torch.no_grad():
        getattr(model, model.base_model_prefix).encoder.layer[1].attention.self.key.weight.mul_(-1.5)
    after = fu.logits_at(ids, rows, cols)
    assert float((after - before).abs().max()) > 1e-3
    assert float((after - hf.logits_at(ids, rows, cols)).abs().max()) < 2e-5


def test_fused_switch(monkeypatch):
    monkeypatch.setenv("MLMPROB_FUSED", "0")
    assert not fused_default()
    tok = tiny_tokenizer(64)
    assert HFMaskedLM(_esm(1), tok, proposal_ids=tok.residue_ids)._fused is None
    monkeypatch.delenv("MLMPROB_FUSED")
    assert fused_default()
    assert fused.fused_encoder(_esm(1).esm) is not None and fused.fused_encoder(tiny_hf("bert").model.bert) is not None
    assert fused.fused_encoder(tiny_hf("distilbert").model.distilbert) is None


def test_int8_activation_bits_do_not_saturate():
    """Activations are 8-bit only where fbgemm accumulates in int32 (AVX512-VNNI): a product that
    saturates AVX2's int16 pair sums (255 x 127 x 2 > 32767) still comes out exact."""
    if not int8_supported():
        pytest.skip("no fbgemm int8 kernels in this torch build")
    lin = torch.nn.Linear(64, 8, bias=False)
    with torch.no_grad():
        lin.weight.fill_(0.05)
    q = Int8Linear.from_linear(lin)
    assert q.reduce_range == int8_reduce_range()
    x = torch.full((4, 64), 10.0)
    x[0, 0] = 0.0  # range [0, 10]: 10 quantizes to the top level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = q(x)
    assert torch.allclose(y[1:], lin(x)[1:], rtol=1e-3), (y[1, 0].item(), lin(x)[1, 0].item())


def test_real_rotation_equals_complex():
    """The rotation used on devices without complex kernels (MPS) is the complex one, in reals."""
    f = fused.FusedEsm(_esm(1).esm)
    rot = f._context(_batch())
    x = torch.randn(2, rot.shape[0], 4, 8, generator=torch.Generator().manual_seed(0))
    want, got = f._rotate(x, rot[:, None, :], real=False), f._rotate(x, rot[:, None, :], real=True)
    assert float((want - x).abs().max()) > 0.1  # positions really rotate
    assert torch.allclose(want, got, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rotary_frequencies_stay_float32(dtype):
    """In half precision the rotary angles are the float32 model's, also far along a sequence (a bf16
    ``inv_freq`` is off by up to 0.4 rad at distance 1,000); transformers keeps them float32 too."""
    model = _esm(1)
    want = fused.FusedEsm(model.esm)._context(torch.zeros(1, 1000, dtype=torch.long))
    half = apply_precision(copy.deepcopy(model), "cpu", dtype)
    assert half.esm.rotary_embeddings.inv_freq.dtype == dtype  # the buffer itself is rounded
    got = fused.FusedEsm(half.esm)._context(torch.zeros(1, 1000, dtype=torch.long))
    assert torch.equal(torch.angle(got), torch.angle(want))
