"""Protein masked LMs from the hub or a directory (ESM-2, ESM-1b/1v, ESM C, ProtBERT, AbLang-style BERTs).

A protein model (:func:`is_protein_model`; ``load_mlm(..., alphabet=...)`` forces it) gets a residue tokenizer (one
token per upper-case character, ``_`` for the mask; ProtBERT's spaces added here), ``proposal_ids`` (the 20
residues or ``alphabet``'s letters), and a window for longer proteins (:mod:`mlmprob.models.windowed`)."""

from __future__ import annotations

from ..alphabet import AMINO_ACIDS
from ..errors import ModelLoadError
from .hf import HFMaskedLM
from .length import text_config
from .tokenizers import ResidueTokenizer, own_pad_id, text_list
from .windowed import WindowedMLM

RESERVED_PAD = "<mlmprob:pad>"  # the padding token of a tokenizer without one of its own
MAX_EXTRA_LETTERS = 12  # single characters beyond the 20 residues a protein vocabulary may hold
PROTEIN_FAMILIES = ("esm", "esmc")  # transformers architectures trained on proteins only


def is_protein_tokenizer(hf_tok) -> bool:
    """Whether a Hugging Face tokenizer belongs to a protein MLM: an ``EsmTokenizer``, or a vocabulary of the 20
    residues as single upper-case letters plus special, bracketed and a few other single-character tokens."""
    if type(hf_tok).__name__.startswith("EsmTokenizer"):
        return True
    special = set(hf_tok.all_special_tokens) - set(AMINO_ACIDS)  # a residue made special is still a residue
    singles = set()
    for t in hf_tok.get_vocab():
        if t in special or (len(t) > 2 and t[0] + t[-1] in ("<>", "[]")):
            continue
        if len(t) != 1 or t.islower():
            return False
        singles.add(t)
    return set(AMINO_ACIDS) <= singles and len(singles) <= len(AMINO_ACIDS) + MAX_EXTRA_LETTERS


def is_protein_model(model, hf_tok) -> bool:
    """Whether ``model`` with ``hf_tok`` is a protein MLM: a protein architecture (``PROTEIN_FAMILIES``) whose
    tokenizer holds the 20 canonical residues as tokens, or any architecture with a protein tokenizer."""
    family = getattr(text_config(model), "model_type", "")
    return (family in PROTEIN_FAMILIES and set(AMINO_ACIDS) <= set(hf_tok.get_vocab())) or is_protein_tokenizer(hf_tok)


class ProteinTokenizer(ResidueTokenizer):
    """A ``ResidueTokenizer`` that also reads residues separated by white space (ProtBERT's
    ``"M K T A"``); ``decode`` gives the plain string."""

    def encode(self, texts):
        return super().encode(["".join(t.split()) if isinstance(t, str) else t for t in text_list(texts)])


def residue_tokenizer(hf_tok, vocab_size: int | None = None) -> ProteinTokenizer:
    """A one-token-per-residue tokenizer over the Hugging Face tokenizer's own vocabulary and the special tokens it
    puts around a sequence. Without a pad token of its own (:func:`mlmprob.models.tokenizers.own_pad_id`) it pads
    with a reserved id at ``vocab_size`` (the model's), outside the vocabulary."""
    by_id = {i: t for t, i in hf_tok.get_vocab().items()}
    tokens = [by_id.get(i, f"<unused_{i}>") for i in range(max(by_id) + 1)]
    probe = tokens.index("A")
    full = list(hf_tok("A", add_special_tokens=True)["input_ids"])
    if probe not in full:
        raise ModelLoadError("this protein tokenizer does not map the residue 'A' to its own token")
    k = full.index(probe)
    pre, post = full[:k], full[k + 1 :]
    if len(pre) > 1 or len(post) > 1:
        raise ModelLoadError(
            f"this protein tokenizer wraps a sequence in {len(pre)} + {len(post)} special tokens; "
            "only one begin and one end token are supported"
        )
    if hf_tok.mask_token is None:
        raise ModelLoadError("this tokenizer has no mask token; it does not belong to a masked LM")
    if own_pad_id(hf_tok) is not None:
        pad = hf_tok.pad_token
    elif vocab_size is not None:
        tokens = tokens + [f"<unused_{i}>" for i in range(len(tokens), vocab_size)] + [RESERVED_PAD]
        pad = RESERVED_PAD
    else:
        pad = hf_tok.pad_token if hf_tok.pad_token is not None else hf_tok.mask_token
    return ProteinTokenizer(
        tokens,
        bos=tokens[pre[0]] if pre else None,
        eos=tokens[post[0]] if post else None,
        pad=pad,
        mask=hf_tok.mask_token,
        unk=hf_tok.unk_token,
        max_length=None,
    )


def alphabet_ids(tok: ResidueTokenizer, alphabet: str | None) -> list[int]:
    """Token ids of the proposal alphabet: the 20 canonical residues by default (or for
    ``"canonical"``/``"protein"``), else the letters of ``alphabet``, each a residue of the vocabulary."""
    letters = AMINO_ACIDS if alphabet is None or alphabet.lower() in ("canonical", "protein") else alphabet.upper()
    if not letters or len(set(letters)) != len(letters):
        raise ModelLoadError(f"alphabet must be distinct one-letter residues, got {alphabet!r}")
    missing = [c for c in letters if c not in tok.residues]
    if missing:
        raise ModelLoadError(
            f"alphabet letters {''.join(missing)!r} are not tokens of this model (its residues: {tok.residues})"
        )
    return [tok.token_to_id[c] for c in letters]


def check_special_residues(hf_tok) -> None:
    """Refuse a protein tokenizer one of whose special tokens (pad, mask, CLS/BOS, SEP/EOS, UNK) is a residue
    letter: that residue would be read as padding (or a mask, ...). Checked at load: every command refuses alike."""
    for role in ("pad", "mask", "cls", "bos", "sep", "eos", "unk"):
        token = getattr(hf_tok, f"{role}_token", None)
        if isinstance(token, str) and len(token) == 1 and token in AMINO_ACIDS:
            raise ModelLoadError(
                f"this protein tokenizer's {role} token is {token!r}, which is also the residue {token}, so that "
                f"residue and its {role} token cannot be told apart; give the tokenizer a {role} token of its own "
                f"({role}_token in tokenizer_config.json)"
            )


def protein_window(model, max_length: int | None) -> int | None:
    """The longest row (special tokens included) the model reads: ``max_position_embeddings - 2`` for ESM models
    (rotary ESM-2 included, trained on 1024-token crops), else ``max_length`` (:mod:`mlmprob.models.length`)."""
    cfg = model.config
    if getattr(cfg, "model_type", "") == "esm" and getattr(cfg, "max_position_embeddings", None):
        n = int(cfg.max_position_embeddings) - 2
        return n if max_length is None else min(n, max_length)
    return max_length


def protein_mlm(
    model, hf_tok, *, name: str, max_length: int | None, alphabet: str | None = None, fused: bool | None = None
):
    """The model as a protein MLM (residue tokenizer, residue proposals, windowing), or None when neither
    :func:`is_protein_model` nor ``alphabet`` says it is one. ``alphabet="none"`` opts out."""
    if (alphabet or "").lower() == "none" or (alphabet is None and not is_protein_model(model, hf_tok)):
        return None
    check_special_residues(hf_tok)
    tok = residue_tokenizer(hf_tok, getattr(text_config(model), "vocab_size", None))
    window = protein_window(model, max_length)
    mlm = HFMaskedLM(model, tok, name=name, proposal_ids=alphabet_ids(tok, alphabet), max_length=window, fused=fused)
    return mlm if window is None else WindowedMLM(mlm, window)
