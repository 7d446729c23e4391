"""Text <-> ids for the model wrappers, with input errors that name the problem: ``ResidueTokenizer`` for one-letter
alphabets and ``HFTokenizer`` around any Hugging Face tokenizer (``encode(texts) -> Encoding``, ``decode(ids)``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from ..errors import TokenizationError

MASK_CHAR = "_"
# cells that stand for a missing value in tables; a residue tokenizer refuses them rather than reading them
# as residues ("NA" is not the dipeptide N-A). English text models read them as words.
PLACEHOLDERS = frozenset({"na", "n/a", "nan", "none", "null", "-", "?", "."})


@dataclass(frozen=True)
class Encoding:
    """A right-padded batch: ``input_ids`` ``[B, L]``, ``word_ids`` ``[B, L]`` (word index of each token within its
    sequence, -1 at special tokens and padding) and ``lengths`` ``[B]``."""

    input_ids: torch.Tensor
    word_ids: torch.Tensor
    lengths: torch.Tensor


def _check_text(i: int, text: str) -> str:
    if not isinstance(text, str):
        raise TokenizationError(f"sequence {i} is not a string: {type(text).__name__}")
    if not text.strip():
        raise TokenizationError(f"sequence {i} is empty")
    return text.strip()


def text_list(texts: Sequence[str] | str) -> list[str]:
    """One text or a non-empty sequence of texts, as a list."""
    if isinstance(texts, bytes) or not isinstance(texts, str | Iterable):
        raise TokenizationError(f"encode takes a text or a list of texts, got {type(texts).__name__}")
    texts = [texts] if isinstance(texts, str) else list(texts)
    if not texts:
        raise TokenizationError("no sequences given")
    return texts


def _encode(tok, texts) -> Encoding:
    """``texts`` encoded one by one (``tok._encode_one``), right-padded with ``tok.pad_id``."""
    done = [tok._encode_one(i, _check_text(i, text)) for i, text in enumerate(text_list(texts))]
    L = max(len(r) for r, _ in done)
    ids = torch.full((len(done), L), tok.pad_id, dtype=torch.long)
    wid = torch.full((len(done), L), -1, dtype=torch.long)
    for b, (r, w) in enumerate(done):
        ids[b, : len(r)] = torch.tensor(r)
        wid[b, : len(w)] = torch.tensor(w)
    return Encoding(ids, wid, torch.tensor([len(r) for r, _ in done]))


class ResidueTokenizer:
    """One token per character (e.g. amino acids), with begin/end tokens around each sequence.

    ``_`` in a text stands for the mask token. Residues are upper-case letters: lower case and the missing-value
    placeholders of tables (``na``, ``NA``, ``N/A``, ``nan``, ``none``, ``null``, ``-``) are refused.

    >>> tok = ResidueTokenizer(["<s>", "<pad>", "</s>", "<mask>", "A", "C"], bos="<s>", eos="</s>",
    ...                        pad="<pad>", mask="<mask>", max_length=8)
    >>> tok.encode(["ACA", "C_"]).input_ids.tolist()
    [[0, 4, 5, 4, 2], [0, 5, 3, 2, 1]]
    >>> tok.encode(["ACa"])
    Traceback (most recent call last):
    ...
    mlmprob.errors.TokenizationError: sequence 0 has lower-case 'a' at residue 3; residues are upper-case letters (AC)
    >>> tok.encode(["NA"])
    Traceback (most recent call last):
    ...
    mlmprob.errors.TokenizationError: sequence 0 is 'NA', a missing-value placeholder, not a sequence
    >>> tok.decode([0, 4, 5, 3, 2])
    'AC_'
    >>> tok.encode(["AXC"])
    Traceback (most recent call last):
    ...
    mlmprob.errors.TokenizationError: sequence 0 has symbol 'X' at residue 2, outside the vocabulary (AC)
    """

    def __init__(
        self,
        tokens: Sequence[str],
        *,
        bos: str | None,
        eos: str | None,
        pad: str,
        mask: str,
        max_length: int | None = None,
        unk: str | None = None,
    ):
        self.tokens = list(tokens)
        self.token_to_id = {t: i for i, t in enumerate(self.tokens)}
        self.bos_id = self.token_to_id[bos] if bos else None
        self.eos_id = self.token_to_id[eos] if eos else None
        self.pad_id = self.token_to_id[pad]
        self.mask_id = self.token_to_id[mask]
        specials = {s for s in (bos, eos, pad, mask, unk) if s is not None}
        self.special_ids = frozenset(self.token_to_id[s] for s in specials)
        self.residues = "".join(t for t in self.tokens if len(t) == 1 and t not in specials)
        self.residue_ids = [self.token_to_id[c] for c in self.residues]
        self.max_length = max_length

    @property
    def n_special(self) -> int:
        return (self.bos_id is not None) + (self.eos_id is not None)

    def encode(self, texts: Sequence[str]) -> Encoding:
        return _encode(self, texts)

    def _encode_one(self, i: int, s: str) -> tuple[list[int], list[int]]:
        """The ids and word ids of the checked text ``s`` of sequence ``i``."""
        if s.lower() in PLACEHOLDERS:
            raise TokenizationError(f"sequence {i} is {s!r}, a missing-value placeholder, not a sequence")
        for j, c in enumerate(s):
            if c != MASK_CHAR and c not in self.residues:
                raise TokenizationError(
                    f"sequence {i} has lower-case {c!r} at residue {j + 1}; residues are upper-case letters "
                    f"({self.residues})"
                    if c.islower() and c.upper() in self.residues
                    else f"sequence {i} has symbol {c!r} at residue {j + 1}, outside the vocabulary ({self.residues})"
                )
        ids = [self.mask_id if c == MASK_CHAR else self.token_to_id[c] for c in s]
        if self.max_length is not None and len(ids) + self.n_special > self.max_length:
            raise TokenizationError(
                f"sequence {i} has {len(ids)} residues; the model accepts at most {self.max_length - self.n_special}"
            )
        pre = [self.bos_id] if self.bos_id is not None else []
        post = [self.eos_id] if self.eos_id is not None else []
        return pre + ids + post, [-1] * len(pre) + list(range(len(ids))) + [-1] * len(post)

    def decode(self, ids: Sequence[int] | torch.Tensor) -> str:
        shown = (i for i in torch.as_tensor(ids).tolist() if i == self.mask_id or i not in self.special_ids)
        return "".join(MASK_CHAR if i == self.mask_id else self.tokens[i] for i in shown)


def _other_special_ids(hf_tok) -> set[int]:
    """The ids of a tokenizer's special tokens other than padding: mask, CLS/BOS, SEP/EOS, UNK."""
    ids = (getattr(hf_tok, f"{k}_token_id", None) for k in ("mask", "cls", "sep", "bos", "eos", "unk"))
    return {i for i in ids if i is not None}


def own_pad_id(hf_tok) -> int | None:
    """The tokenizer's pad id when it is a token of its own, else None (the model then pads with
    :func:`padding_id`'s reserved id). Right padding is found by its id and hidden from attention, so no real token
    may have it: a pad is trusted only if it differs from every other special token (EuroBERT's configuration pads
    with its EOS) and is named as padding (``[PAD]``, ``<pad>``, ...; not an ordinary word such as ``the``)."""
    pad = hf_tok.pad_token_id
    if pad is None or pad in _other_special_ids(hf_tok) or "pad" not in str(hf_tok.pad_token).lower():
        return None
    return int(pad)


def padding_id(hf_tok, vocab_size: int) -> int:
    """The id rows are right-padded with: the tokenizer's own pad (:func:`own_pad_id`), else ``vocab_size``, a
    reserved id outside the vocabulary that no token has (the model adapter never feeds it to the model)."""
    own = own_pad_id(hf_tok)
    return int(vocab_size) if own is None or own >= vocab_size else own


class HFTokenizer:
    """Adapter over a Hugging Face tokenizer with the same ``encode``/``decode`` interface. ``vocab_size`` (the
    model's) lets it pad with a reserved id when the tokenizer has no pad of its own (:func:`padding_id`); without
    it the tokenizer's pad (or its mask) is used."""

    def __init__(self, tokenizer, max_length: int | None = None, vocab_size: int | None = None):
        self.hf = tokenizer
        if tokenizer.mask_token_id is None:
            raise TokenizationError("this tokenizer has no mask token; it does not belong to a masked LM")
        self.mask_id = tokenizer.mask_token_id
        self._checked_pad = vocab_size is not None  # a pad no text may hold
        if vocab_size is not None:
            self.pad_id = padding_id(tokenizer, vocab_size)
        else:
            self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.mask_token_id
        self.unk_id = tokenizer.unk_token_id
        special, pad = set(tokenizer.all_special_ids), tokenizer.pad_token_id
        if self._checked_pad and self.pad_id != pad and pad not in _other_special_ids(tokenizer):
            special.discard(pad)  # a pad set to an ordinary word stays a word here
        self.special_ids = frozenset(special)
        self.max_length = max_length

    def encode(self, texts: Sequence[str]) -> Encoding:
        return _encode(self, texts)

    def _encode_one(self, i: int, s: str) -> tuple[list[int], list[int]]:
        enc = self.hf(s, add_special_tokens=True, truncation=False)
        ids = list(enc["input_ids"])
        if self.unk_id is not None and self.unk_id in ids and self.unk_id not in self.special_ids - {self.unk_id}:
            j = ids.index(self.unk_id)
            word = s
            if hasattr(enc, "word_ids") and enc.word_ids() and enc.word_ids()[j] is not None:
                span = enc.word_to_chars(enc.word_ids()[j])
                word = s[span.start : span.end]
            raise TokenizationError(f"sequence {i} has {word!r}, which the tokenizer maps to its unknown token")
        if self.max_length is not None and len(ids) > self.max_length:
            raise TokenizationError(f"sequence {i} has {len(ids)} tokens; the model accepts at most {self.max_length}")
        if self._checked_pad and self.pad_id in ids:
            raise TokenizationError(
                f"sequence {i} holds the padding token {self.hf.pad_token!r}; mlmprob pads "
                "rows itself, so a text cannot contain it"
            )
        try:
            wid = [-1 if w is None else w for w in enc.word_ids()]
        except (ValueError, AttributeError):  # slow tokenizers: every non-special token is a word
            wid = [-1 if t in self.special_ids else k for k, t in enumerate(ids)]
        return ids, [-1 if t in self.special_ids else w for t, w in zip(ids, wid, strict=True)]

    def decode(self, ids: Sequence[int] | torch.Tensor) -> str:
        hidden = (self.special_ids - {self.mask_id}) | {self.pad_id}
        return self.hf.decode([i for i in torch.as_tensor(ids).tolist() if i not in hidden])
