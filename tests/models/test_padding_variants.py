"""Tokenizer variants whose pad id is not a token of its own (issue 28): no pad token, pad equal to
[SEP] (EuroBERT's published configuration pads with its EOS), pad equal to an ordinary word. mlmprob
pads such rows with a reserved id outside the vocabulary, so a real [MASK], [SEP] or word is never
taken for padding: ``pll``, ``token_scores``, ``loglik`` and the samplers' site conditionals of a padded
batch equal a brute-force loop over the plain transformers model (one unpadded sequence at a time).
Without the reserved id these cases were off by 0.5-1 nats per token with no error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conformance_models import MASK, SEP, VOCAB, tiny_config  # noqa: E402

transformers = pytest.importorskip("transformers")

SEQS = ["the cat sat on the mat", "a dog ran", "big red sun and sky"]
TOL = 1e-5

# variant -> what to do to a BertTokenizer before saving it
VARIANTS = {
    "own pad": lambda tok: None,
    "no pad token": lambda tok: setattr(tok, "pad_token", None),
    "pad is [SEP]": lambda tok: setattr(tok, "pad_token", "[SEP]"),
    "pad is [MASK]": lambda tok: setattr(tok, "pad_token", "[MASK]"),
    "pad is a word": lambda tok: setattr(tok, "pad_token", "the"),
}


def _save(folder: Path, model_type: str, variant: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = tiny_config(model_type)
    if variant == "pad is [SEP]":
        cfg.pad_token_id = SEP  # as EuroBERT's config: pad_token_id == eos_token_id
    torch.manual_seed(0)  # test fixture weights
    model = transformers.AutoModelForMaskedLM.from_config(cfg)
    model.save_pretrained(str(folder))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tok = transformers.BertTokenizer(str(folder / "vocab.txt"), do_lower_case=True, model_max_length=40)
    VARIANTS[variant](tok)
    tok.save_pretrained(str(folder))


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    cache = {}
    root = tmp_path_factory.mktemp("padvariants")
    n = torch.get_num_threads()
    torch.set_num_threads(1)

    def get(model_type, variant):
        key = (model_type, variant)
        if key not in cache:
            from mlmprob import load_mlm

            folder = root / f"{model_type}-{variant.replace(' ', '_')}"
            _save(folder, model_type, variant)
            mlm = load_mlm(str(folder), device="cpu", dtype="float32")
            ref = transformers.AutoModelForMaskedLM.from_pretrained(str(folder)).eval()
            hf = transformers.AutoTokenizer.from_pretrained(str(folder))
            special = set(hf.all_special_ids) - ({hf.pad_token_id} if variant == "pad is a word" else set())
            ref.words = torch.tensor([i for i in range(len(VOCAB)) if i not in special])  # loglik's alphabet
            cache[key] = (mlm, ref)
        return cache[key]

    yield get
    torch.set_num_threads(n)


@torch.no_grad()
def reference(ref, x: torch.Tensor, t: int, masked=()) -> torch.Tensor:
    y = x.clone()[None]
    y[0, t] = MASK
    for s in masked:
        y[0, s] = MASK
    return ref(input_ids=y).logits[0, t].double().log_softmax(-1)


CASES = [("bert", v) for v in VARIANTS] + [("eurobert", "pad is [SEP]"), ("roberta", "no pad token")]


def _cases():
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES as names

    return [pytest.param(m, v, id=f"{m}-{v.replace(' ', '_')}") for m, v in CASES if m in names]


@pytest.mark.parametrize("model_type, variant", _cases())
def test_padded_batch_equals_unpadded_reference(loaded, model_type, variant):
    import mlmprob
    from mlmprob.sampling.forward import site_logits

    mlm, ref = loaded(model_type, variant)
    enc = mlm.encode(SEQS)
    ids, lengths = enc.input_ids, enc.lengths.tolist()
    assert len(set(lengths)) == 3 and ids.shape[1] == max(lengths)  # a padded batch
    if variant != "own pad":
        assert mlm.pad_id >= mlm.vocab_size  # the reserved id, never a token
    scores = mlmprob.token_scores(mlm, ids).log_prob
    pll = mlmprob.pll(mlm, ids)
    l2r = mlmprob.loglik(mlm, ids, order="l2r").per_order[:, 0]
    select = torch.zeros(ids.shape, dtype=torch.bool)
    for b, L in enumerate(lengths):
        select[b, 1 : L - 1] = True
    site, _ = site_logits(mlm, ids, select)
    for b, L in enumerate(lengths):
        x = ids[b, :L]
        want = torch.tensor([float(reference(ref, x, t)[x[t]]) for t in range(1, L - 1)], dtype=torch.float64)
        assert torch.allclose(scores[b, 1 : L - 1].double(), want, atol=TOL, rtol=0), (variant, b)
        assert abs(float(pll[b]) - float(want.sum())) < 10 * TOL, (variant, b)
        chain = 0.0
        for t in range(1, L - 1):
            lp = reference(ref, x, t, masked=range(t + 1, L - 1))
            chain += float(lp[x[t]] - lp[ref.words].logsumexp(-1))
            got = site[b, t].double().log_softmax(-1)
            assert torch.allclose(got, reference(ref, x, t), atol=TOL, rtol=0), (variant, b, t)
        assert abs(float(l2r[b]) - chain) < 10 * TOL, (variant, b)
    text = mlm.decode(ids[1])
    assert "the" not in text.split() or variant != "pad is a word"  # padding never decodes as a word


def test_a_text_holding_the_pad_token_is_refused(loaded):
    from mlmprob.errors import TokenizationError

    mlm, _ = loaded("bert", "own pad")
    with pytest.raises(TokenizationError, match="padding token"):
        mlm.encode(["the cat [PAD] sat"])


def test_mask_at_the_end_of_a_row_is_not_padding(loaded):
    """A row ending in [MASK] (its [SEP] replaced) keeps its full length: no pad token -> no mask-as-pad."""
    import mlmprob
    from mlmprob.models.reader import reader_of

    mlm, ref = loaded("bert", "no pad token")
    ids = mlm.encode(["the cat sat"]).input_ids
    ids[0, -1] = MASK
    assert reader_of(mlm).lengths(ids).tolist() == [ids.shape[1]]
    got = mlmprob.token_scores(mlm, ids, positions=[1]).log_prob[0, 1]
    x = ids[0]
    assert abs(float(got) - float(reference(ref, x, 1)[x[1]])) < TOL
