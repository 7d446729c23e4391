"""Training data: token-id tensors plus the tokenizer that makes ``load_mlm`` read the result (``TokenData``).
``SyntheticSource``: a ``SyntheticLanguage`` sampled exactly (seeds from the run's); symbols become tokens
``t0..t{V-1}`` after five specials (``model id = symbol + SYMBOL_OFFSET``), rows ``[CLS] x [SEP]``. ``TextSource``:
one sequence per non-empty line, with a deterministic WordPiece tokenizer."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..errors import MLMProbError
from ..runtime.inputs import decode_text, spool_input
from ..synthetic.base import SyntheticLanguage
from ..synthetic.io import save_language
from .masking import generator_for
from .wordpiece import SPECIALS, train_wordpiece

SYMBOL_OFFSET = len(SPECIALS)


@dataclass(frozen=True)
class TokenData:
    """Right-padded ``train_ids`` ``[N, L]`` and ``heldout_ids`` ``[M, L]`` in the tokenizer's ids."""

    train_ids: torch.Tensor
    heldout_ids: torch.Tensor
    tokenizer: Any  # a transformers tokenizer (saved next to the model)
    max_length: int
    replace_ids: torch.Tensor  # ids a "random" corruption may draw (non-special tokens)
    language: SyntheticLanguage | None = None
    description: dict = field(default_factory=dict)

    @property
    def pad_id(self) -> int:
        return int(self.tokenizer.pad_token_id)

    @property
    def mask_id(self) -> int:
        return int(self.tokenizer.mask_token_id)

    def maskable(self, ids: torch.Tensor) -> torch.Tensor:
        """Bool: positions that hold a non-special token (these are selected for the loss)."""
        special = torch.tensor(sorted(set(self.tokenizer.all_special_ids)), dtype=torch.long)
        return ~torch.isin(ids, special)

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for t in (self.train_ids, self.heldout_ids):
            h.update(str(tuple(t.shape)).encode())
            h.update(t.contiguous().numpy().tobytes())
        return h.hexdigest()[:16]


def symbol_tokenizer(vocab_size: int, max_length: int):
    """A ``BertTokenizer`` over ``[PAD] [UNK] [CLS] [SEP] [MASK] t0 .. t{V-1}`` (text: ``"t0 t3 t1"``).

    >>> tok = symbol_tokenizer(3, 8)
    >>> tok("t2 t0 t1")["input_ids"]
    [2, 7, 5, 6, 3]
    """
    from transformers import BertTokenizer

    vocab = {tok: i for i, tok in enumerate(list(SPECIALS) + [f"t{v}" for v in range(vocab_size)])}
    return BertTokenizer(vocab=vocab, do_lower_case=True, model_max_length=max_length)


def wrap_symbols(x: torch.Tensor, cls_id: int = 2, sep_id: int = 3) -> torch.Tensor:
    """Symbols ``[B, T]`` -> model ids ``[B, T + 2]``: ``[CLS] x + offset [SEP]``."""
    B = x.shape[0]
    return torch.cat([torch.full((B, 1), cls_id), x + SYMBOL_OFFSET, torch.full((B, 1), sep_id)], 1)


#: The most tokens of sampled training and held-out data (int64: 1.6 GB), checked before they are sampled.
MAX_TOKENS = 2 * 10**8


@dataclass(frozen=True)
class SyntheticSource:
    """Exact samples of ``language``: ``n_train`` for training, ``n_heldout`` held out."""

    language: SyntheticLanguage
    n_train: int = 10000
    n_heldout: int = 1000

    def build(self, out_dir: Path, seed: int) -> TokenData:
        if self.n_train < 1 or self.n_heldout < 1:
            raise MLMProbError(f"n_train and n_heldout must be at least 1, got {self.n_train}, {self.n_heldout}")
        lang = self.language
        tokens = (self.n_train + self.n_heldout) * (lang.length + 2)
        if tokens > MAX_TOKENS:
            raise MLMProbError(
                f"n_train {self.n_train:,} + n_heldout {self.n_heldout:,} sequences of {lang.length:,} symbols are "
                f"{tokens:,} tokens, more than the {MAX_TOKENS:,} a run may hold in memory: sample fewer"
            )
        train = lang.sample(self.n_train, generator_for(seed, "synthetic-train"))
        held = lang.sample(self.n_heldout, generator_for(seed, "synthetic-heldout"))
        L = lang.length + 2
        save_language(lang, Path(out_dir) / "language.safetensors")
        desc = {"source": "synthetic", **lang.spec(), "n_train": self.n_train, "n_heldout": self.n_heldout}
        symbols = torch.arange(SYMBOL_OFFSET, SYMBOL_OFFSET + lang.vocab_size)
        tok = symbol_tokenizer(lang.vocab_size, L)
        return TokenData(wrap_symbols(train), wrap_symbols(held), tok, L, symbols, lang, desc)


@dataclass(frozen=True)
class TextSource:
    """Lines of text files; a WordPiece vocabulary of ``vocab_size`` is trained on the training lines.

    ``heldout_fraction`` of the lines (at least one) is held out, chosen with the run's seed. Sequences longer than
    ``max_length`` tokens (special tokens included) are truncated. A tokenizer already saved in the output directory
    (a resumed run) is reused, not retrained."""

    files: Sequence[str]
    vocab_size: int = 1000
    max_length: int = 128
    heldout_fraction: float = 0.05
    lowercase: bool = True

    def read_lines(self) -> list[str]:
        lines = []
        for f in self.files:
            p, _ = spool_input(f, "text")  # standard input (-), /dev/stdin, a pipe or a FIFO: its copy
            if p.is_dir():
                raise MLMProbError(f"text file {f} is a folder, not a file")
            if not p.is_file():
                raise MLMProbError(f"text file not found: {f}")
            text = decode_text(p.read_bytes(), f"text file {str(p)!r}", offsets=True)  # a binary file: one line
            lines += [s.strip() for s in text.splitlines() if s.strip()]
        if len(lines) < 2:
            raise MLMProbError(f"need at least 2 non-empty lines of text to train and hold out, got {len(lines)}")
        return lines

    def build(self, out_dir: Path, seed: int) -> TokenData:
        from transformers import BertTokenizer

        from ..runtime.safefs import refuse_link

        if not 0.0 < self.heldout_fraction < 1.0:
            raise MLMProbError(f"heldout_fraction must lie in (0, 1), got {self.heldout_fraction}")
        if self.max_length < 3:
            raise MLMProbError(f"max_length must be at least 3 ([CLS] token [SEP]), got {self.max_length}")
        train, held = split_heldout(self.read_lines(), self.heldout_fraction, seed)
        tok_dir = Path(out_dir) / "tokenizer"
        if (tok_dir / "tokenizer_config.json").is_file():
            tok = BertTokenizer.from_pretrained(str(tok_dir))
        else:  # saved under a temporary name, then renamed: a kill never leaves half a tokenizer behind
            tok = train_wordpiece(train, self.vocab_size, self.max_length, self.lowercase)
            tmp = tok_dir.with_name(tok_dir.name + ".tmp")
            for p in (tmp, tok_dir):  # never written or deleted through a symbolic link
                refuse_link(p, "the tokenizer folder")
            shutil.rmtree(tmp, ignore_errors=True)
            tok.save_pretrained(str(tmp))
            shutil.rmtree(tok_dir, ignore_errors=True)
            tmp.rename(tok_dir)

        def encode(texts):  # right-padded [N, L]
            rows = [torch.tensor(tok(t, truncation=True, max_length=self.max_length)["input_ids"]) for t in texts]
            return torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=tok.pad_token_id)

        special = set(tok.all_special_ids)
        replace = torch.tensor([i for i in range(len(tok)) if i not in special], dtype=torch.long)
        desc = {"source": "text", "files": [str(f) for f in self.files], "n_train": len(train), "n_heldout": len(held)}
        desc.update(heldout_fraction=self.heldout_fraction, max_length=self.max_length, tokenizer_vocab_size=len(tok))
        desc["lowercase"] = self.lowercase
        return TokenData(encode(train), encode(held), tok, self.max_length, replace, None, desc)


def split_heldout(lines: Sequence[str], fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """``(train, held_out)``: ``round(fraction * n)`` lines (at least one) held out in a permutation seeded
    by ``seed`` (the split of ``TextSource``)."""
    order = torch.randperm(len(lines), generator=generator_for(seed, "text-split")).tolist()
    n_held = max(1, round(fraction * len(lines)))
    return [lines[i] for i in order[n_held:]], [lines[i] for i in order[:n_held]]
