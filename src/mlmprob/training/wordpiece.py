"""A deterministic WordPiece vocabulary trainer (``tokenizers``' breaks ties by hash-map order, so its vocabulary
changes between processes: huggingface/tokenizers issue #1794). The same algorithm (BPE with the ``##`` prefix) on
words split as ``BertTokenizer`` splits them, from the specials and every character seen (plain and ``##``, sorted),
merging the most frequent pair, ties to the smallest ``(a, b)``, until ``vocab_size`` tokens or no pair occurs
``min_frequency`` times."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise

from ..errors import MLMProbError

PREFIX = "##"
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def words_of(lines: Iterable[str], lowercase: bool = True) -> Counter:
    """Word counts of ``lines``, split as a ``BertTokenizer`` with ``do_lower_case=lowercase`` splits them."""
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    norm = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase)
    pre = BertPreTokenizer()
    counts: Counter = Counter()
    for line in lines:
        counts.update(w for w, _ in pre.pre_tokenize_str(norm.normalize_str(line)))
    return counts


def learn_vocab(
    word_counts: dict[str, int], vocab_size: int, specials: Sequence[str], min_frequency: int = 1
) -> list[str]:
    """The WordPiece vocabulary (specials first) learned from ``word_counts``; see the module docstring.

    The alphabet is always kept whole, so the result may be longer than ``vocab_size`` when the
    alphabet alone exceeds it; it is shorter when merges run out first."""
    if min_frequency < 1:
        raise MLMProbError(f"min_frequency must be at least 1, got {min_frequency}")
    words = sorted(word_counts)  # fixed order: word index -> word
    freq = [int(word_counts[w]) for w in words]
    pieces = [[w[0]] + [PREFIX + c for c in w[1:]] for w in words]
    vocab = list(dict.fromkeys(specials))
    vocab += sorted({c for w in words for c in w} - set(vocab))
    vocab += sorted({c for p in pieces for c in p[1:]} - set(vocab))
    known = set(vocab)

    pair_count: Counter = Counter()
    where: dict[tuple[str, str], set[int]] = {}
    for i, p in enumerate(pieces):
        for pair in pairwise(p):
            pair_count[pair] += freq[i]
            where.setdefault(pair, set()).add(i)
    heap = [(-n, a, b) for (a, b), n in pair_count.items()]
    heapq.heapify(heap)

    while len(vocab) < vocab_size and heap:
        neg, a, b = heapq.heappop(heap)
        if pair_count.get((a, b), 0) != -neg:
            continue  # a stale entry: the count has changed since
        if -neg < min_frequency:
            break
        merged = a + b[len(PREFIX) :]
        if merged not in known:
            known.add(merged)
            vocab.append(merged)
        touched: Counter = Counter()
        for i in where.pop((a, b)):  # the order of words does not matter: changes are summed
            p, f = pieces[i], freq[i]
            for pair in pairwise(p):
                touched[pair] -= f
            out, j = [], 0
            while j < len(p):
                if j + 1 < len(p) and p[j] == a and p[j + 1] == b:
                    out.append(merged)
                    j += 2
                else:
                    out.append(p[j])
                    j += 1
            pieces[i] = out
            for pair in pairwise(out):
                touched[pair] += f
                where.setdefault(pair, set()).add(i)
        for pair, delta in touched.items():
            if delta:
                pair_count[pair] += delta
                if pair_count[pair] > 0:
                    heapq.heappush(heap, (-pair_count[pair], *pair))
                else:
                    del pair_count[pair]  # (a, b) itself ends here: no word keeps it
    return vocab


def train_wordpiece(
    lines: Sequence[str], vocab_size: int, max_length: int, lowercase: bool = True, specials: Sequence[str] = SPECIALS
):
    """Learn a WordPiece vocabulary of ``vocab_size`` from ``lines``; return it as a ``transformers.BertTokenizer``.

    The same lines give the same vocabulary in every process (unlike ``tokenizers``' trainer).

    >>> tok = train_wordpiece(["the cat sat", "the cats sat on the mat"], 40, 16)
    >>> tok.convert_ids_to_tokens(tok("the cat")["input_ids"])
    ['[CLS]', 'the', 'cat', '[SEP]']
    """
    from transformers import BertTokenizer

    if vocab_size < len(specials) + 1:
        raise MLMProbError(f"tokenizer vocab_size must exceed the {len(specials)} special tokens, got {vocab_size}")
    counts = words_of(lines, lowercase)
    if not counts:
        raise MLMProbError("cannot train a WordPiece vocabulary: the lines have no words")
    vocab = learn_vocab(counts, vocab_size, specials)
    return BertTokenizer(
        vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=lowercase, model_max_length=max_length
    )
