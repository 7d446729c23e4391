"""English sentences and the token gaps the infilling experiments hide in them.

Datasets: the held-out English evaluation sets of ``english_sets.evaluation_sets`` (never used to
train ``en-small``), read from the shared data folder:

- ``snli``: distinct SNLI test premises and hypotheses (``snli_test.tsv``);
- ``xsum``: XSum test summaries (``xsum_test.jsonl``, field ``summary``);

the first ``POOL_SIZE`` sentences of 4..60 words of each (``evaluation_sets`` reads both files).

A gap of ``k`` tokens is ``k`` consecutive non-special tokens of the *model's* tokenization (sub-word
tokens for a WordPiece or BPE model), so the gaps depend on the tokenizer: ``encode_sentences`` takes
the loaded model (two models with one tokenizer get the same gaps). The only region is ``random``.

Draws (``sample_token_gaps``): sentences the model cannot encode (longer than its maximum length, or
holding a piece its tokenizer maps to the unknown token) or with fewer than ``k + 1`` non-special
tokens are skipped; of the ``m`` left, gap ``i`` takes sentence ``perm[i mod m]`` of a permutation
seeded by ``(seed, dataset, k)`` and its start from a generator seeded by ``(seed, dataset, k, i)``,
so gap ``i`` is the same whatever the number of gaps drawn. Beyond ``m`` gaps sentences repeat
(with their own starts).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.errors import MLMProbError
from mlmprob.models.reader import reader_of
from mlmprob.positions import TOKENS, default_mask

from .data_option import resolve_data_dir
from .english_sets import FILES, evaluation_sets

ENGLISH_DATASETS = ("snli", "xsum")
ENGLISH_REGIONS = ("random",)
POOL_SIZE = 1000  # sentences per dataset (the default of ``evaluation_sets``)


def seed_of(*parts) -> int:
    """A generator seed from any parts (CRC-32 of their ``|``-joined text).

    >>> seed_of(0, "snli", 2, 5) == seed_of(0, "snli", 2, 5) != seed_of(0, "snli", 2, 6)
    True
    """
    return zlib.crc32("|".join(map(str, parts)).encode())


@dataclass(frozen=True)
class Sentence:
    """One evaluation sentence: ``id`` (``"<dataset>-<index in the set>"``) and its ``text``."""

    id: str
    text: str


@dataclass(frozen=True)
class EncodedSentence:
    """A sentence as the model encodes it: ``input_ids`` (special tokens included, no padding) and
    ``cols``, the columns of its non-special tokens."""

    id: str
    text: str
    input_ids: tuple[int, ...]
    cols: tuple[int, ...]


@dataclass(frozen=True)
class Encoded:
    """The encodable sentences of a set and the skipped ones as ``(sentence id, reason)``."""

    sentences: tuple[EncodedSentence, ...]
    skipped: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class TokenGap:
    """Tokens ``cols`` (columns of ``input_ids``) of sentence ``chain_id`` hidden: the ``k`` consecutive
    non-special tokens from the ``start``-th one (0-based, special tokens not counted). The field
    names follow ``antibody_gaps.GapSpec`` so that records keep one schema; ``seq`` is the text."""

    gap_id: int
    chain_id: str
    seq: str
    input_ids: tuple[int, ...]
    start: int
    cols: tuple[int, ...]
    k: int
    region: str

    @property
    def gold_ids(self) -> tuple[int, ...]:
        return tuple(self.input_ids[c] for c in self.cols)


def load_sentences(dataset: str, data_dir: str | Path, n: int = POOL_SIZE) -> list[Sentence]:
    """The first ``n`` sentences of English dataset ``dataset`` (``snli`` or ``xsum``)."""
    if dataset not in ENGLISH_DATASETS:
        raise MLMProbError(f"unknown English dataset {dataset!r}; use one of {', '.join(ENGLISH_DATASETS)}")
    d = resolve_data_dir(data_dir, FILES)
    try:
        texts = evaluation_sets(d, n)[dataset]
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        raise MLMProbError(f"cannot read the English evaluation data in {d}: {type(e).__name__}: {e}") from None
    if not texts:
        raise MLMProbError(f"the {dataset} set in {d} has no sentence of 4 to 60 words")
    return [Sentence(f"{dataset}-{i}", s) for i, s in enumerate(texts)]


def encode_sentences(mlm, sentences: Sequence[Sentence]) -> Encoded:
    """Encode each sentence with ``mlm.encode``; sentences the model rejects (too long, unknown
    token) are skipped with the reason."""
    if not reader_of(mlm).has_text:
        raise MLMProbError("English gaps need a model with a tokenizer (an ``encode`` method)")
    max_len = reader_of(mlm).max_length
    kept, skipped = [], []
    for s in sentences:
        try:
            ids = mlm.encode([s.text]).input_ids
        except MLMProbError as e:
            skipped.append((s.id, str(e)))
            continue
        ids = ids[:, : int(reader_of(mlm).lengths(ids)[0])]
        if max_len is not None and ids.shape[1] > max_len:
            skipped.append((s.id, f"{ids.shape[1]} tokens; the model accepts at most {max_len}"))
            continue
        cols = default_mask(mlm, ids, TOKENS)[0].nonzero(as_tuple=True)[0]
        kept.append(EncodedSentence(s.id, s.text, tuple(ids[0].tolist()), tuple(cols.tolist())))
    return Encoded(tuple(kept), tuple(skipped))


def sample_token_gaps(
    sentences: Sequence[EncodedSentence], dataset: str, k: int, n: int, seed: int, region: str = "random"
) -> list[TokenGap]:
    """Gaps ``0..n-1`` of ``k`` consecutive non-special tokens (see the module docstring)."""
    if region not in ENGLISH_REGIONS:
        raise MLMProbError(f"English datasets have only the region(s) {', '.join(ENGLISH_REGIONS)}, got {region!r}")
    if k < 1 or n < 0:
        raise MLMProbError(f"gap length must be positive and the number of gaps non-negative, got k={k}, n={n}")
    pool = [s for s in sentences if len(s.cols) >= k + 1]
    if not pool:
        raise MLMProbError(
            f"no encodable {dataset} sentence has the {k + 1} or more tokens a gap of {k} tokens "
            f"needs ({len(sentences)} encodable sentences)"
        )
    perm = torch.randperm(len(pool), generator=torch.Generator().manual_seed(seed_of(seed, dataset, k))).tolist()
    out = []
    for i in range(n):
        s = pool[perm[i % len(pool)]]
        g = torch.Generator().manual_seed(seed_of(seed, dataset, k, i))
        start = int(torch.randint(len(s.cols) - k + 1, (1,), generator=g))
        out.append(TokenGap(i, s.id, s.text, s.input_ids, start, s.cols[start : start + k], k, region))
    return out
