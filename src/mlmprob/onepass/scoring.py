"""The rows of ``mlmprob score --pll one-pass`` (exact scoring's fields plus ``method``; ``e_raw`` the corrected
logits), and ``check``: ``n`` records scored both ways and compared."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..data import Record, encodable_records, encode_records
from ..energies import pll as exact_pll
from ..errors import MLMProbError, NonFiniteError
from .estimate import one_pass_token_scores


def one_pass_rows(
    mlm, records: Sequence[Record], *, skip_invalid: bool = False, skipped: list | None = None, correction=None
) -> list[dict]:
    """One row per record (``SequenceScore`` fields + ``method``), one unmasked pass per chunk of records."""
    on_skip = None if skipped is None else (lambda r, why: skipped.append((r.id, why)))
    good = encodable_records(mlm, records, on_skip) if skip_invalid else list(records)
    if not good:
        return []
    enc = encode_records(mlm, good)
    s = one_pass_token_scores(mlm, enc.input_ids, correction=correction)
    rows = []
    plls, e_raws = s.pll.tolist(), s.e_raw.tolist()
    for b, r in enumerate(good):
        n = int(s.positions[b].sum())
        p = plls[b]
        if not math.isfinite(p):
            raise NonFiniteError(f"record {r.id!r}: its one-pass score is not finite", rows=[b])
        rows.append(
            dict(
                id=r.id,
                sequence=r.seq,
                n_tokens=n,
                pll=p,
                pll_per_token=p / max(n, 1),
                e_local=-p,
                e_raw=e_raws[b],
                method="one_pass",
            )
        )
    return rows


@dataclass(frozen=True)
class CheckResult:
    n: int
    spearman: float
    mean_abs: float
    max_abs: float
    exact_seconds: float
    one_pass_seconds: float

    def line(self) -> str:
        return (
            f"check (one_pass vs exact PLL on {self.n} random records of this run): Spearman {self.spearman:.4f}, "
            f"mean |error| {self.mean_abs:.3f} nats, max |error| {self.max_abs:.3f} nats; "
            f"exact {self.exact_seconds:.1f} s, one-pass {self.one_pass_seconds:.2f} s"
        )


def spearman(a, b) -> float:
    """Spearman rank correlation (:func:`mlmprob.metrics.ranking.spearman`), rounded to 6 digits."""
    from ..metrics.ranking import spearman as rank_correlation

    rho = rank_correlation(torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64))
    return round(float(rho), 6)


def check(mlm, records: Sequence[Record], n: int, *, seed: int = 0, correction=None) -> CheckResult:
    """Score ``n`` random records (seeded choice) both ways and compare their PLLs."""
    import time

    if n < 2:
        raise MLMProbError(f"--check needs at least 2 records to rank, got {n}")
    pick = sorted(random.Random(seed).sample(range(len(records)), min(n, len(records))))
    chosen = [records[i] for i in pick]
    t0 = time.perf_counter()
    fast = [r["pll"] for r in one_pass_rows(mlm, chosen, correction=correction)]
    t1 = time.perf_counter()
    exact = [float(x) for x in exact_pll(mlm, encode_records(mlm, chosen).input_ids)]
    t2 = time.perf_counter()
    err = torch.tensor(fast, dtype=torch.float64) - torch.tensor(exact, dtype=torch.float64)
    return CheckResult(
        len(chosen), spearman(fast, exact), float(err.abs().mean()), float(err.abs().max()), t2 - t1, t1 - t0
    )
