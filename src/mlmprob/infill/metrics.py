"""Infilling metrics (Calef et al., sec. 5.2): top-k accuracy of the exact gap, sentence BLEU of
the top-1 fill (BLEU-n with ``n = min(k, 4)`` for a gap of ``k`` tokens: for ``k <= 4`` this is
non-zero only for an exact match, as in the paper's tables), and per-token identity.

``bleu`` equals sacrebleu's sentence BLEU with ``max_ngram_order=n``, ``smooth_method="none"``,
``tokenize="none"`` and ``effective_order=False`` on space-joined tokens (a test checks this); it is
computed here on token sequences so that residues and token ids need no detokenization.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence


def topk_hit(ranked: Sequence[Sequence], gold: Sequence, k: int) -> bool:
    """Whether ``gold`` is among the first ``k`` of ``ranked``.

    >>> topk_hit([(1, 2), (3, 4)], (3, 4), 1), topk_hit([(1, 2), (3, 4)], [3, 4], 2)
    (False, True)
    """
    g = tuple(gold)
    return any(tuple(r) == g for r in list(ranked)[:k])


def _ngrams(seq: Sequence, n: int) -> Counter:
    return Counter(tuple(seq[i:i + n]) for i in range(len(seq) - n + 1))


def bleu(hypothesis: Sequence, reference: Sequence, max_n: int | None = None) -> float:
    """Sentence BLEU (Papineni et al.) in [0, 1]: geometric mean of the clipped n-gram precisions
    ``n = 1..max_n`` (uniform weights, no smoothing) times the brevity penalty. ``max_n`` defaults
    to ``min(len(reference), 4)``.

    >>> bleu("ABCD", "ABCD"), round(bleu("ABCE", "ABCD", 2), 6)   # sqrt(3/4 * 2/3)
    (1.0, 0.707107)
    >>> bleu("ABCE", "ABCD")     # BLEU-4 of 4 tokens: exact match only
    0.0
    """
    hyp, ref = list(hypothesis), list(reference)
    if max_n is None:
        max_n = min(len(ref), 4)
    if not hyp or max_n < 1:
        return 0.0
    log_p = 0.0
    for n in range(1, max_n + 1):
        h, r = _ngrams(hyp, n), _ngrams(ref, n)
        total = sum(h.values())
        match = sum(min(c, r[g]) for g, c in h.items())
        if total == 0 or match == 0:
            return 0.0
        log_p += math.log(match / total) / max_n
    bp = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return bp * math.exp(log_p)


def identity(hypothesis: Sequence, reference: Sequence) -> float:
    """Fraction of positions where the fill equals the reference (residue identity).

    >>> identity("ACDE", "ACDF")
    0.75
    """
    if len(hypothesis) != len(reference) or not reference:
        raise ValueError(f"identity needs equal, non-zero lengths, got {len(hypothesis)} and {len(reference)}")
    return sum(a == b for a, b in zip(hypothesis, reference)) / len(reference)


TOP_KS = (1, 5, 10, 20)


def gap_metrics(ranked: Sequence[Sequence], gold: Sequence) -> dict[str, float]:
    """The per-gap metrics of the tables: ``top1``/``top5``/``top10``/``top20`` (0 or 1), ``bleu``
    and ``identity`` of the top-1 fill (0 when there is no candidate).

    >>> gap_metrics([(1, 2), (1, 3)], (1, 3))
    {'top1': 0.0, 'top5': 1.0, 'top10': 1.0, 'top20': 1.0, 'bleu': 0.0, 'identity': 0.5}
    """
    out = {f"top{k}": float(topk_hit(ranked, gold, k)) for k in TOP_KS}
    first = list(ranked[0]) if len(ranked) else None
    out["bleu"] = bleu(first, gold) if first else 0.0
    out["identity"] = identity(first, gold) if first else 0.0
    return out
