"""Metrics of sequences against a reference: ``topk_hit``, sentence ``bleu`` (equal to sacrebleu's with
``max_ngram_order=n``, no smoothing or tokenization, ``effective_order=False``; computed on tokens) and
``corpus_bleu``, ``identity``, ``stutter_rate``, and ``gap_metrics``, the per-gap metrics of the infilling tables
(Calef et al., sec. 5.2: BLEU-``min(k, 4)`` of the top-1 fill of a ``k``-token gap)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

from ..errors import MLMProbError


def topk_hit(ranked: Sequence[Sequence], gold: Sequence, k: int) -> bool:
    """Whether ``gold`` is among the first ``k`` of ``ranked``.

    >>> topk_hit([(1, 2), (3, 4)], (3, 4), 1), topk_hit([(1, 2), (3, 4)], [3, 4], 2)
    (False, True)
    """
    g = tuple(gold)
    return any(tuple(r) == g for r in list(ranked)[:k])


def _clipped(hyp: Sequence, ref: Sequence, n: int) -> tuple[int, int]:
    """``(matches, total)``: the n-grams of ``hyp`` found in ``ref`` (clipped at their count there), and all of them."""
    h, r = (Counter(tuple(s[i : i + n]) for i in range(len(s) - n + 1)) for s in (hyp, ref))
    return sum(min(c, r[g]) for g, c in h.items()), sum(h.values())


def bleu(hypothesis: Sequence, reference: Sequence, max_n: int | None = None) -> float:
    """Sentence BLEU (Papineni et al.) in [0, 1]: geometric mean of the clipped n-gram precisions ``n = 1..max_n``
    (uniform weights, no smoothing) times the brevity penalty. ``max_n`` defaults to ``min(len(reference), 4)``.

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
        match, total = _clipped(hyp, ref, n)
        if total == 0 or match == 0:
            return 0.0
        log_p += math.log(match / total) / max_n
    bp = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return bp * math.exp(log_p)


def corpus_bleu(hypotheses: Sequence[Sequence], references: Sequence[Sequence], max_n: int = 4) -> float:
    """Corpus BLEU-``max_n`` (Papineni et al.) in [0, 1]: clipped n-gram matches and counts summed over all pairs,
    geometric mean of the ``n = 1..max_n`` precisions (uniform weights, no smoothing), brevity penalty from the summed
    lengths. Sentence BLEU-4 of a short sequence is 0 unless a 4-gram matches; the corpus BLEU of many is not.

    >>> round(corpus_bleu(["ABCD", "ABCE"], ["ABCD", "ABCD"]), 6)   # (7/8 * 5/6 * 3/4 * 1/2) ** (1/4)
    0.723127
    >>> corpus_bleu(["AB"], ["AB"], max_n=4)        # no 3-grams at all
    0.0
    """
    match, total = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for h, r in zip(hypotheses, references, strict=True):
        hyp_len, ref_len = hyp_len + len(h), ref_len + len(r)
        for n in range(1, max_n + 1):
            m, t = _clipped(h, r, n)
            match[n - 1] += m
            total[n - 1] += t
    if hyp_len == 0 or min(total) == 0 or min(match) == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(match, total, strict=True)) / max_n
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return bp * math.exp(log_p)


def identity(hypothesis: Sequence, reference: Sequence) -> float:
    """Fraction of positions where the sequence equals the reference (residue identity).

    >>> identity("ACDE", "ACDF")
    0.75
    """
    if len(hypothesis) != len(reference) or not reference:
        raise MLMProbError(f"identity needs equal, non-zero lengths, got {len(hypothesis)} and {len(reference)}")
    return sum(a == b for a, b in zip(hypothesis, reference, strict=True)) / len(reference)


def stutter_rate(seq: Sequence) -> float:
    """Share of adjacent pairs of equal tokens (residues); ``nan`` for fewer than two.

    >>> stutter_rate("AAAB"), stutter_rate("ACDE")
    (0.6666666666666666, 0.0)
    """
    pairs = len(seq) - 1
    return math.nan if pairs < 1 else sum(a == b for a, b in pairwise(seq)) / pairs


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
