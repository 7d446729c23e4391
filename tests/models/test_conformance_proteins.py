"""Protein masked LMs recognised as such, one tiny random model per layout, each with its tokenizer built
offline (issue 28): ESM-2 (rotary), ESM-1b (learned absolute positions), ESM C (``esmc``), ProtBERT-style and
AbLang-style BERTs (single-letter vocabularies, residues typed with spaces for the Hugging Face tokenizer),
and an ESM whose vocabulary alone would not say "protein" (recognised by its architecture).

Each is loaded with ``load_mlm(folder, dtype="float32")`` and must: propose the 20 canonical residues only;
read a protein typed as ``"MKT..."`` one token per residue, as its own tokenizer reads the protein in its
typed form; give ``pll``/``token_scores`` equal to a brute-force loop over the plain transformers model (a
short protein in a padded batch); and read a protein longer than its window through windows
(``models/windowed.py``), each position as the model reads it in the window centred on it.
"""

from __future__ import annotations

import pytest
import torch
from conftest import ESM_VOCAB, PROTBERT_VOCAB

import mlmprob
from mlmprob.alphabet import AMINO_ACIDS
from mlmprob.models.windowed import WindowedMLM, window_starts

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("one_thread")

WINDOW = 16  # tokens, special tokens included
PROT = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGD"
ABLANG_VOCAB = ["<"] + list("MRHKDESTNQCGPAVIFYWL") + ["-", ">", "*", "X", "|"]  # AbLang's layout
TINY = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, initializer_range=0.5)


def _esm(d, position_embedding_type, vocab=ESM_VOCAB):
    (d / "vocab.txt").write_text("\n".join(vocab))
    tok = transformers.EsmTokenizer(str(d / "vocab.txt"))
    # ESM's positions: rotary has no table (its window is max_position_embeddings - 2, as ESM-2's 1026);
    # learned absolute positions start after the padding index 1, so the table holds WINDOW + 2 rows
    cfg = transformers.EsmConfig(
        vocab_size=len(vocab),
        max_position_embeddings=WINDOW + 2,
        position_embedding_type=position_embedding_type,
        pad_token_id=1,
        mask_token_id=vocab.index("<mask>"),
        token_dropout=True,
        **TINY,
    )
    return transformers.EsmForMaskedLM(cfg), tok


def _bert(d, vocab, **specials):
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = transformers.BertTokenizer(str(d / "vocab.txt"), do_lower_case=False, **specials)
    pad = vocab.index(specials.get("pad_token", "[PAD]"))
    cfg = transformers.BertConfig(
        vocab_size=len(vocab),
        max_position_embeddings=WINDOW,
        pad_token_id=pad,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        **TINY,
    )
    return transformers.BertForMaskedLM(cfg), tok


def _esmc(d):
    if "esmc" not in transformers.models.auto.modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        pytest.skip(f"transformers {transformers.__version__} has no ESM C (esmc)")
    tok = transformers.EsmcTokenizer()
    cfg = transformers.AutoConfig.for_model(
        "esmc",
        vocab_size=len(tok.get_vocab()),
        max_position_embeddings=WINDOW,
        pad_token_id=tok.pad_token_id,
        mask_token_id=tok.mask_token_id,
        bos_token_id=tok.cls_token_id,
        eos_token_id=tok.eos_token_id,
        **{k: v for k, v in TINY.items() if k != "initializer_range"},
    )
    model = transformers.AutoModelForMaskedLM.from_config(cfg)
    with torch.no_grad():  # larger weights than the default init: conditionals far from uniform
        for p in model.parameters():
            p.mul_(3.0)
    return model, tok


# layout -> (builder, how its own tokenizer wants a protein typed)
LAYOUTS = {
    "esm2": (lambda d: _esm(d, "rotary"), "plain"),
    "esm1b": (lambda d: _esm(d, "absolute"), "plain"),
    "esmc": (_esmc, "plain"),
    "protbert": (lambda d: _bert(d, PROTBERT_VOCAB), "spaced"),
    "ablang": (
        lambda d: _bert(d, ABLANG_VOCAB, cls_token="<", sep_token=">", pad_token="-", mask_token="*", unk_token="X"),
        "spaced",
    ),
    # "null" (not bracketed, several letters) makes the vocabulary alone not a protein one: the architecture is
    "esm-by-architecture": (
        lambda d: _esm(d, "rotary", [t if t != "<null_1>" else "null" for t in ESM_VOCAB]),
        "plain",
    ),
}


class Reference:
    """``log_softmax`` at position ``t`` of one unpadded row with ``t`` masked, through the plain model; the
    masked copies of one row run together (one length, no padding)."""

    def __init__(self, model, mask_id):
        self.model, self.mask_id = model, mask_id

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, positions) -> torch.Tensor:
        positions = list(positions)
        y = x[None].repeat(len(positions), 1)
        y[range(len(positions)), positions] = self.mask_id
        logits = self.model(input_ids=y).logits
        return logits[range(len(positions)), positions].double().log_softmax(-1)


@pytest.fixture(scope="module")
def proteins(tmp_path_factory):
    """``layout -> (mlm, model as built, its Hugging Face tokenizer, typing)``, built on first use."""
    cache = {}

    def get(layout):
        if layout not in cache:
            build, typing = LAYOUTS[layout]
            d = tmp_path_factory.mktemp(layout)
            torch.manual_seed(0)  # test fixture weights
            model, tok = build(d)
            model.save_pretrained(str(d))
            tok.save_pretrained(str(d))
            hf = transformers.AutoTokenizer.from_pretrained(str(d))
            cache[layout] = (mlmprob.load_mlm(str(d), dtype="float32"), model.eval(), hf, typing)
        return cache[layout]

    return get


def typed(seq: str, typing: str) -> str:
    return " ".join(seq) if typing == "spaced" else seq


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_recognised_with_residue_alphabet_and_positions(proteins, layout):
    mlm, _, hf, typing = proteins(layout)
    assert isinstance(mlm.wrapped, WindowedMLM) and mlm.window == WINDOW and mlm.max_length is None
    vocab = hf.get_vocab()
    assert sorted(mlm.proposal_ids.tolist()) == sorted(vocab[c] for c in AMINO_ACIDS)
    seq = PROT[:10]
    want = hf(typed(seq, typing))["input_ids"]
    assert len(want) == len(seq) + 2  # one token per residue, one begin and one end token
    enc = mlm.encode([seq, " ".join(seq), "MKT_A"])
    assert enc.input_ids[0].tolist() == want and enc.input_ids[1].tolist() == want
    assert enc.word_ids[0, 1:-1].tolist() == list(range(len(seq)))  # residue-level positions
    assert mlm.decode(enc.input_ids[0]) == seq and mlm.decode(enc.input_ids[2]) == "MKT_A"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_scores_equal_brute_force(proteins, layout):
    mlm, model, _, _ = proteins(layout)
    ref = Reference(model, mlm.mask_id)
    seqs = [PROT[:12], PROT[12:17]]  # 14 and 7 tokens: both fit the window, padded together
    ids = mlm.encode(seqs).input_ids
    scores = mlmprob.token_scores(mlm, ids).log_prob
    pll = mlmprob.pll(mlm, ids)
    for b, seq in enumerate(seqs):
        L = len(seq) + 2
        x = ids[b, :L]
        want = ref(x, range(1, L - 1))[torch.arange(L - 2), x[1 : L - 1]]
        assert torch.allclose(scores[b, 1 : L - 1], want, atol=1e-5, rtol=0), (layout, b)
        assert abs(float(pll[b]) - float(want.sum())) < 1e-4


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_long_protein_through_the_window(proteins, layout):
    """A protein longer than the window (42 residues, 44 tokens > 16) is read, each position as the model
    reads it in the window of 16 tokens centred on it (``window_starts``); the window's maximum itself fits."""
    mlm, model, _, _ = proteins(layout)
    ref = Reference(model, mlm.mask_id)
    fits = mlm.encode([PROT[: WINDOW - 2]]).input_ids
    assert fits.shape[1] == WINDOW and torch.isfinite(mlmprob.pll(mlm, fits)).all()
    x = mlm.encode([PROT]).input_ids[0]
    L = len(x)
    reads = torch.arange(1, L - 1)
    got = mlmprob.token_scores(mlm, x[None]).log_prob[0, 1 : L - 1]
    starts = window_starts(torch.full_like(reads, L), reads, WINDOW)
    for s in starts.unique().tolist():
        at = reads[starts == s]
        want = ref(x[s : s + WINDOW], (at - s).tolist())[torch.arange(len(at)), x[at]]
        assert torch.allclose(got[at - 1], want, atol=1e-5, rtol=0), (layout, s)


def test_a_text_bert_with_the_same_vocabulary_is_not_a_protein_model(tmp_path):
    """The architecture decides only for protein families: a BERT whose vocabulary is not a protein one
    stays a text model."""
    vocab = [t if t != "<null_1>" else "null" for t in ESM_VOCAB]
    model, tok = _bert(
        tmp_path, vocab, cls_token="<cls>", sep_token="<eos>", pad_token="<pad>", mask_token="<mask>", unk_token="<unk>"
    )
    model.save_pretrained(str(tmp_path))
    tok.save_pretrained(str(tmp_path))
    mlm = mlmprob.load_mlm(str(tmp_path), dtype="float32")
    assert not isinstance(mlm.wrapped, WindowedMLM) and mlm.proposal_ids is None
