"""The real embedded models load offline and predict real antibodies; loaders fail with clear errors."""

import pytest
import torch

import mlmprob
from mlmprob import MLMProbError, load_mlm
from mlmprob.batching import iter_masked_logits
from mlmprob.errors import ModelLoadError
from mlmprob.models.reader import reader_of

# Trastuzumab VH/VL (public sequences; VH also in the shared data README).
VH = "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYAMDYWGQGTLVTVSS"
VL = "DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSGSRSGTDFTLTISSLQPEDFATYYCQQHYTTPPTFGQGTKVEIK"


def masked_accuracy(mlm, seq, step=4):
    """Share of residues (every `step`-th) that the model recovers when masked alone."""
    enc = mlm.encode([seq])
    cols = torch.arange(1, enc.lengths[0] - 1, step)
    rows = torch.zeros_like(cols)
    hits = 0
    for idx, logits in iter_masked_logits(mlm, enc.input_ids, rows, cols):
        hits += int((logits.argmax(-1) == enc.input_ids[0, cols[idx]]).sum())
    return hits / len(cols)


def test_antiberty_loads_offline_and_predicts(antiberty):
    m = antiberty
    assert (m.vocab_size, m.mask_id, m.pad_id) == (25, 4, 0)
    assert m.proposal_ids.tolist() == list(range(5, 25)) and m.max_length == 512
    assert m.decode(m.encode([VH]).input_ids[0]) == VH
    assert masked_accuracy(m, VH) > 0.75  # a random model scores ~0.05


@pytest.mark.parametrize("name,seq", [("sapiens-vh", VH), ("sapiens-vl", VL)])
def test_sapiens_conversion_predicts(name, seq):
    m = load_mlm(name)
    assert (m.vocab_size, m.mask_id, m.pad_id) == (25, 24, 1)
    assert m.max_length == {"sapiens-vh": 144, "sapiens-vl": 128}[name]  # learned positions in the checkpoint
    # RobertaForMaskedLM's modules and names (built natively: tests/models/test_native.py checks each parameter
    # against transformers' RobertaForMaskedLM, which load_sapiens(fused=False) builds)
    assert m.model.base_model_prefix == "roberta" and hasattr(m.model, "lm_head")
    assert type(load_mlm(name, fused=False).model).__name__ == "RobertaForMaskedLM"
    assert m.encode([seq]).input_ids[0, 0] == 0 and m.decode(m.encode([seq]).input_ids[0]) == seq
    assert masked_accuracy(m, seq, step=2) > 0.6


def test_sapiens_heavy_prefers_heavy_chains(sapiens_vh):
    vl = load_mlm("sapiens-vl")
    h = mlmprob.pll(sapiens_vh, sapiens_vh.encode([VH]).input_ids) / len(VH)
    h_on_l = mlmprob.pll(vl, vl.encode([VH]).input_ids) / len(VH)
    assert float(h) > float(h_on_l) + 0.5


def test_batch_composition_does_not_change_scores(sapiens_vh):
    seqs = [VH, VH[:60], VH[30:100]]
    ids = sapiens_vh.encode(seqs).input_ids
    together = mlmprob.token_scores(reader_of(sapiens_vh, 4096), ids).log_prob
    for b, s in enumerate(seqs):
        alone = mlmprob.token_scores(reader_of(sapiens_vh, 300), sapiens_vh.encode([s]).input_ids).log_prob[0]
        n = alone.shape[0]
        assert torch.allclose(together[b, :n], alone, atol=1e-4)


def test_bfloat16_is_close(sapiens_vh):
    low = load_mlm("sapiens-vh", dtype="bf16")
    assert low.dtype == torch.bfloat16
    ids = sapiens_vh.encode([VH[:40]]).input_ids
    a, b = mlmprob.pll(sapiens_vh, ids), mlmprob.pll(low, ids)
    assert abs(float(a - b)) < 0.05 * abs(float(a)) + 1.0


def test_local_hf_directory_roundtrip(tmp_path):
    import transformers as tf

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "##s", "a"]
    tok = tf.BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    model = tf.BertForMaskedLM(
        tf.BertConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=16,
        )
    )
    tok.save_pretrained(tmp_path)
    model.save_pretrained(tmp_path)
    m = load_mlm(str(tmp_path))
    enc = m.encode(["the cats sat on a mat"])
    assert enc.input_ids[0].tolist() == [2, 5, 6, 10, 7, 8, 11, 9, 3]
    assert enc.word_ids[0].tolist() == [-1, 0, 1, 1, 2, 3, 4, 5, -1]
    assert m.max_length == 16
    s = mlmprob.token_scores(m, enc.input_ids, word_ids=enc.word_ids)
    assert s.n_tokens.tolist() == [7]
    with pytest.raises(MLMProbError, match="'dog'.*unknown token"):
        m.encode(["the dog sat"])
    with pytest.raises(MLMProbError, match="at most 16"):
        m.encode(["the cat sat " * 6])


def test_load_errors_name_the_problem(tmp_path):
    for name, msg in [
        ("no-such-model-xyz", "cannot load 'no-such-model-xyz'"),
        (str(tmp_path), "cannot load"),
        ("antiberty", None),
    ]:
        if msg is None:
            continue
        with pytest.raises(ModelLoadError, match=msg) as e:
            load_mlm(name)
        assert "\n" not in str(e.value)
    with pytest.raises(ModelLoadError, match="unknown dtype"):
        load_mlm("antiberty", dtype="int3")
    if not torch.cuda.is_available():
        with pytest.raises(ModelLoadError, match="no CUDA GPU"):
            load_mlm("antiberty", device="cuda")


def test_en_small_is_shipped_and_prefers_real_sentences():
    """The packaged English model loads offline; a natural sentence has a higher PLL than the same
    words shuffled for nearly every pair (a random model would be right about half the time)."""
    en = load_mlm("en-small")
    assert en.name == "en-small" and en.max_length == 64
    sents = [
        "the cat sat on the mat .",
        "she opened the door and walked into the room .",
        "a man is playing a guitar on the street .",
        "it was the best of times , it was the worst of times .",
        "the children are playing in the park .",
        "he did not know what to say .",
        "the government announced a new plan on monday .",
        "two dogs are running through the snow .",
        "i have never seen such a beautiful place .",
        "the meeting will take place next week .",
    ]
    g = torch.Generator().manual_seed(0)
    shuffled = []
    for s in sents:
        w = s.split()
        shuffled.append(" ".join(w[i] for i in torch.randperm(len(w), generator=g).tolist()))
    real = mlmprob.pll(en, en.encode(sents).input_ids)
    fake = mlmprob.pll(en, en.encode(shuffled).input_ids)
    assert int((real > fake).sum()) >= 9
