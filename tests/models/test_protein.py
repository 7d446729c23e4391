"""Protein MLMs from a directory: ESM-2 and ProtBERT layouts (random weights, tokenizers built here),
the 20-residue proposals, plain decoding, the alphabet option and the windowing rule."""

import pytest
import torch
from conftest import ESM_VOCAB, PROTBERT_VOCAB

import mlmprob
from mlmprob.alphabet import AMINO_ACIDS
from mlmprob.errors import MLMProbError, ModelLoadError
from mlmprob.models.exact import LookupMLM
from mlmprob.models.hf import HFMaskedLM
from mlmprob.models.protein import is_protein_tokenizer
from mlmprob.models.windowed import WindowedMLM

pytestmark = pytest.mark.usefixtures("one_thread")

PROT = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQV"


def naive_pll(model, ids, pad_id, mask_id, positions):
    """One masked copy per position through the raw HF model, one at a time."""
    total = 0.0
    with torch.no_grad():
        for t in positions:
            x = ids.clone()
            x[t] = mask_id
            out = model(input_ids=x[None], attention_mask=(x != pad_id).long()[None]).logits[0, t].double()
            total += float(out.log_softmax(-1)[ids[t]])
    return total


def test_esm_directory_is_a_protein_model(esm):
    assert isinstance(esm.wrapped, WindowedMLM) and esm.window == 16 and esm.max_length is None
    canon = sorted(ESM_VOCAB.index(c) for c in AMINO_ACIDS)
    assert sorted(esm.proposal_ids.tolist()) == canon
    enc = esm.encode(["MKTAYIAKQR", "MK T_"])
    assert enc.input_ids[0].tolist() == [0] + [ESM_VOCAB.index(c) for c in "MKTAYIAKQR"] + [2]
    assert esm.decode(enc.input_ids[0]) == "MKTAYIAKQR" and esm.decode(enc.input_ids[1]) == "MKT_"
    ids = enc.input_ids[0]
    ref = naive_pll(esm.model, ids, 1, esm.mask_id, range(1, 11))
    assert abs(float(mlmprob.pll(esm, ids[None])) - ref) < 1e-4
    with pytest.raises(MLMProbError, match="'J'"):
        esm.encode(["MKJ"])
    with pytest.raises(MLMProbError, match="lower-case 'm' at residue 1"):  # issue 27: never upper-cased silently
        esm.encode(["mk t_"])


def test_protbert_layout_reads_plain_and_spaced_residues(protbert_dir):
    import transformers as tf

    m = mlmprob.load_mlm(str(protbert_dir))
    hf = tf.AutoTokenizer.from_pretrained(str(protbert_dir))
    want = hf("M K T A Y I A K Q R")["input_ids"]
    assert m.encode(["MKTAYIAKQR"]).input_ids[0].tolist() == want
    assert m.encode(["M K T A Y I A K Q R"]).input_ids[0].tolist() == want
    assert m.decode(want) == "MKTAYIAKQR"
    assert sorted(m.proposal_ids.tolist()) == sorted(PROTBERT_VOCAB.index(c) for c in AMINO_ACIDS)
    assert isinstance(m.wrapped, WindowedMLM) and m.window == 24
    long = m.encode([PROT[:40]]).input_ids  # 42 tokens > 24: windowed, not an error
    assert torch.isfinite(mlmprob.pll(m, long)).all()


def test_sampling_infill_and_pair_joints_use_only_the_20_residues(esm):
    canon = set(ESM_VOCAB.index(c) for c in AMINO_ACIDS)
    ids = esm.encode(["MKTAYIAKQRQIS"]).input_ids
    r = mlmprob.sample(
        esm,
        ids.expand(3, -1),
        method="gibbs",
        epochs=3,
        proposal_temperature=3.0,
        generator=torch.Generator().manual_seed(0),
    )
    body = r.samples[..., 1:-1]
    assert set(body.unique().tolist()) <= canon
    assert len(set(body.unique().tolist())) > 5  # high temperature: many residues proposed, none outside
    fills = mlmprob.infill(esm, ids[0], [3, 4, 5], beam_size=5)
    assert all(set(c.tokens) <= canon for c in fills)
    assert mlmprob.pairwise_joint(esm, ids[0], 2, 5).shape == (20, 20)


def test_alphabet_option(esm_dir, tmp_path):
    wide = mlmprob.load_mlm(str(esm_dir), alphabet="ACDEFGHIKLMNPQRSTVWYX")
    assert len(wide.proposal_ids) == 21 and ESM_VOCAB.index("X") in wide.proposal_ids.tolist()
    with pytest.raises(ModelLoadError, match="'J'"):
        mlmprob.load_mlm(str(esm_dir), alphabet="ACJ")
    with pytest.raises(ModelLoadError, match="distinct"):
        mlmprob.load_mlm(str(esm_dir), alphabet="AAC")
    plain = mlmprob.load_mlm(str(esm_dir), alphabet="none")
    assert isinstance(plain.wrapped, HFMaskedLM) and plain.proposal_ids is None
    with pytest.raises(ModelLoadError, match="fixed alphabet"):
        mlmprob.load_mlm("antiberty", alphabet="ACD")


def test_protein_detection_rejects_text_vocabularies():
    import transformers as tf

    words = tf.BertTokenizer(
        vocab={
            w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"] + list(AMINO_ACIDS))
        }
    )
    assert not is_protein_tokenizer(words)
    chars = tf.BertTokenizer(
        vocab={
            w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(AMINO_ACIDS) + list("abc"))
        }
    )
    assert not is_protein_tokenizer(chars)


def _window_start(t, length, window):
    """The rule, written out case by case."""
    if length <= window or t < window // 2:
        return 0
    if t - window // 2 > length - window:
        return length - window
    return t - window // 2


def test_windowed_rule_on_long_rows():
    inner = LookupMLM(vocab_size=3, length=4, seed=2)
    w = WindowedMLM(inner, 4, batch_tokens=8)  # 2 windows per inner call: several sub-batches
    x = torch.randint(0, 4, (2, 9), generator=torch.Generator().manual_seed(0))
    rows, cols = torch.arange(2).repeat_interleave(9), torch.arange(9).repeat(2)
    out = w.logits_at(x, rows, cols)
    assert inner.calls == 2 * 6  # windows start at 0..5 in each row: reads sharing a window share its row
    for n, (b, t) in enumerate(zip(rows.tolist(), cols.tolist())):
        s = _window_start(t, 9, 4)
        assert torch.equal(out[n], inner.logits(x[b : b + 1, s : s + 4])[0, t - s]), (b, t)
    assert torch.equal(w.logits(x), out.view(2, 9, -1))


def test_windowed_equals_the_model_on_inputs_that_fit(esm):
    inner = esm.core
    enc = esm.encode(["MKTAYIAKQRQISF", "MKTAYI"])  # 16 and 8 tokens: both fit the window of 16
    assert torch.equal(esm.logits(enc.input_ids), inner.logits(enc.input_ids))
    r, c = torch.tensor([0, 0, 1]), torch.tensor([3, 15, 2])
    assert torch.equal(esm.logits_at(enc.input_ids, r, c), inner.logits_at(enc.input_ids, r, c))
    assert torch.allclose(mlmprob.pll(esm, enc.input_ids), mlmprob.pll(inner, enc.input_ids), atol=1e-5)


def test_windowed_pll_of_a_long_protein_matches_the_rule(esm):
    seq = PROT[:30]
    ids = esm.encode([seq]).input_ids[0]  # 32 tokens, window 16
    total = 0.0
    with torch.no_grad():
        for t in range(1, 31):
            s = _window_start(t, 32, 16)
            x = ids[s : s + 16].clone()
            x[t - s] = esm.mask_id
            total += float(esm.model(input_ids=x[None]).logits[0, t - s].double().log_softmax(-1)[ids[t]])
    both = esm.encode([seq, seq[:5]]).input_ids  # with a short, padded row in the same batch
    got = mlmprob.pll(esm, both)
    assert abs(float(got[0]) - total) < 1e-4
    assert abs(float(got[1]) - float(mlmprob.pll(esm.core, both[1:, :7]))) < 1e-5
