"""One gap measured for the infilling experiments (``infill_runner``, ``infill_pivots``): the gap's encoded
inputs, a search run on them with the forward rows it used counted (:class:`CountingMLM`), and the record
fields every infilling result file shares (:func:`measure_gap`)."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from mlmprob.errors import MLMProbError
from mlmprob.infilling.gap import InfillCandidate
from mlmprob.metrics.sequences import gap_metrics
from mlmprob.models.reader import reader_of

from .antibody_gaps import GapSpec
from .english_gaps import TokenGap


class CountingMLM:
    """Wraps a masked LM, counting the sequence rows it forwards (``rows``)."""

    def __init__(self, mlm):
        self.mlm = mlm
        self.rows = 0
        if hasattr(mlm, "logits_at"):
            self.logits_at = self._logits_at

    def __getattr__(self, name):
        return getattr(self.mlm, name)

    def logits(self, input_ids):
        self.rows += int(input_ids.shape[0])
        return self.mlm.logits(input_ids)

    def _logits_at(self, input_ids, rows, cols):
        self.rows += int(input_ids.shape[0])
        return self.mlm.logits_at(input_ids, rows, cols)


def gap_inputs(mlm, gap: GapSpec | TokenGap) -> tuple[torch.Tensor, torch.Tensor]:
    """Encoded chain or sentence ``[1, L]`` and the token columns of the gap residues or tokens."""
    if isinstance(gap, TokenGap):  # encoded by this model's tokenizer when the gap was drawn
        return torch.tensor([gap.input_ids], dtype=torch.long), torch.tensor(gap.cols, dtype=torch.long)
    enc = mlm.encode([gap.seq])
    wid = enc.word_ids[0]
    cols = torch.cat([(wid == r).nonzero(as_tuple=True)[0] for r in range(gap.start, gap.start + gap.k)])
    if len(cols) != gap.k:
        raise MLMProbError(f"chain {gap.chain_id}: the tokenizer does not give one token per residue")
    return enc.input_ids, cols


def _decode(mlm, tokens) -> str:
    r = reader_of(mlm)
    return r.decode(list(tokens)) if r.has_text else " ".join(map(str, tokens))


def gap_fields(mlm, gap: GapSpec | TokenGap, cands: list[InfillCandidate]) -> tuple[dict, dict]:
    """Record fields ``gold`` and ``fills`` (texts), and the metrics with any extra fields.

    Antibody metrics compare residue strings; English ones compare token ids (two token sequences
    may decode to one text), and the record keeps those ids."""
    fills = [_decode(mlm, c.tokens) for c in cands]
    if isinstance(gap, TokenGap):
        fill_ids = [tuple(c.tokens) for c in cands]
        extra = {
            **gap_metrics(fill_ids, gap.gold_ids),
            "gold_ids": list(gap.gold_ids),
            "fill_ids": [list(t) for t in fill_ids],
        }
        return {"gold": _decode(mlm, gap.gold_ids), "fills": fills}, extra
    return {"gold": gap.gold, "fills": fills}, gap_metrics(fills, gap.gold)


def measure_gap(
    mlm: CountingMLM, gap: GapSpec | TokenGap, search: Callable[[torch.Tensor, torch.Tensor], list[InfillCandidate]]
) -> dict:
    """Run ``search(ids, cols)`` on ``gap`` and return the record fields every infilling result file
    shares: ``gold``, ``fills``, ``scores``, ``rows`` (sequences forwarded), ``seconds`` and the metrics."""
    ids, cols = gap_inputs(mlm, gap)
    rows0, t1 = mlm.rows, time.time()
    cands = search(ids, cols)
    texts, metrics = gap_fields(mlm, gap, cands)
    return {
        **texts,
        "scores": [c.score for c in cands],
        "rows": mlm.rows - rows0,
        "seconds": round(time.time() - t1, 4),
        **metrics,
    }
