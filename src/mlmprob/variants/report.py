"""What ``mlmprob variants`` builds from a finished output: the saturation table (``Saturation``, for ``write_csv`` /
``write_heatmap`` and an ``L x 20`` matrix CSV), and the evaluation of every method's scores against a label column."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

from ..alphabet import AMINO_ACIDS
from ..errors import MLMProbError
from ..metrics.ranking import Estimate, evaluate
from .saturation import SCORES, Saturation

METRICS = ("spearman", "auroc", "ndcg", "top_recall")


def _num(v) -> float:
    return float("nan") if v is None or v == "" else float(v)


def saturation_from_rows(
    rows: Iterable[dict],
    wild_type: str,
    first_position: int,
    offset: int = 1,
    alphabet: str = AMINO_ACIDS,
    first_number: int = 1,
) -> Saturation:
    """The ``Saturation`` table of the single-mutant rows of a ``--saturate`` output (0 at the wild-type cells).
    ``first_position``: the token position of ``wild_type[0]`` (1 after a BOS token); ``first_number``: its 1-based
    residue number in the whole wild type (a region's ``start + 1``); ``offset``: its number in the mutant strings."""
    L, K = len(wild_type), len(alphabet)
    col = {c: k for k, c in enumerate(alphabet)}
    tables = {s: torch.zeros(L, K, dtype=torch.float64) for s in SCORES}
    seen = torch.zeros(L, K, dtype=torch.bool)
    for r in rows:
        i = int(str(r["mutant"])[1:-1]) - offset
        k = col[str(r["mutant"])[-1]]
        for s in SCORES:
            if s in r:
                tables[s][i, k] = _num(r[s])
        seen[i, k] = True
    wt = torch.tensor([col.get(c, -1) for c in wild_type], dtype=torch.long)
    missing = (torch.arange(K)[None, :] != wt[:, None]) & ~seen  # every cell but the wild type's is a row
    if missing.any():
        raise MLMProbError(f"the output lacks {int(missing.sum())} single mutants (a shard, or skipped rows)")
    return Saturation(
        positions=torch.arange(L) + first_position,
        numbers=torch.arange(L) + offset,
        sequence_numbers=torch.arange(L) + first_number,
        wild_type=wt,
        candidates=torch.arange(K),
        letters=tuple(alphabet),
        wt_letters=tuple(wild_type),
        wt_marginals=tables["wt_marginals"],
        masked_marginals=tables["masked_marginals"],
        n_forward=0,
    )


def write_matrix(sat: Saturation, path: str | Path, score: str = "masked_marginals") -> Path:
    """``score`` as an ``L x K`` CSV: one row per residue (``residue`` = ``A23``), one column per letter."""
    path = Path(path)
    grid = getattr(sat, score)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["residue", *sat.letters])
        for p in range(len(sat.positions)):
            out.writerow([f"{sat.wt_letters[p]}{int(sat.numbers[p])}", *(repr(float(v)) for v in grid[p])])
    return path


MIN_BOOTSTRAP_ROWS = 10  # fewer points give bootstrap intervals that mean little (two give [1, 1] for Spearman)


def small_sample_warning(result: dict) -> str | None:
    """A warning line when a method of :func:`evaluate_methods`'s ``result`` was evaluated on fewer than
    :data:`MIN_BOOTSTRAP_ROWS` rows, else None."""
    n = min((r["n"] for r in result.values()), default=MIN_BOOTSTRAP_ROWS)
    if n >= MIN_BOOTSTRAP_ROWS:
        return None
    return (
        f"warning: only {n} scored rows with a label: too few for a bootstrap interval (the intervals shown "
        f"mean little; use at least {MIN_BOOTSTRAP_ROWS} rows)"
    )


def evaluate_methods(
    scores: dict[str, dict[str, float]],
    labels: dict[str, float],
    methods: Sequence[str],
    *,
    seed: int = 0,
    n_boot: int = 1000,
    top: float = 0.1,
) -> dict:
    """Every method's metrics against ``labels`` (id -> value) over the ids both sides hold with finite values;
    AUROC too when every label is 0 or 1. Each method sees the same resamples (``seed``)."""
    out = {}
    for m in methods:
        ids = [
            i
            for i in scores
            if i in labels and math.isfinite(scores[i].get(m, float("nan"))) and math.isfinite(labels[i])
        ]
        if len(ids) < 2:
            raise MLMProbError(f"method {m}: fewer than 2 scored rows with a label to evaluate")
        pred = torch.tensor([scores[i][m] for i in ids], dtype=torch.float64)
        y = torch.tensor([labels[i] for i in ids], dtype=torch.float64)
        binary = bool(((y == 0) | (y == 1)).all()) and y.min() != y.max()
        g = torch.Generator().manual_seed(seed)
        res: dict[str, Estimate] = evaluate(pred, y, labels=y if binary else None, generator=g, n_boot=n_boot, top=top)
        out[m] = {
            "n": len(ids),
            **{k: {"value": e.value, "low": e.low, "high": e.high, "n_boot": e.n_boot} for k, e in res.items()},
        }
    return out


def format_table(result: dict, top: float = 0.1) -> str:
    """The evaluation as an aligned text table: ``value [low, high]`` per metric."""
    pct = f"{top * 100:g}%"
    names = {"spearman": "Spearman", "auroc": "AUROC", "ndcg": f"NDCG@{pct}", "top_recall": f"recall@{pct}"}
    cols = [k for k in METRICS if any(k in r for r in result.values())]
    head = ["method", "n", *(names[k] for k in cols)]

    def cell(r: dict, k: str) -> str:
        return f"{r[k]['value']:.3f} [{r[k]['low']:.3f}, {r[k]['high']:.3f}]" if k in r else "-"

    body = [[m, str(r["n"]), *(cell(r, k) for k in cols)] for m, r in result.items()]
    width = [max(len(row[j]) for row in [head, *body]) for j in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, width, strict=True)).rstrip() for row in [head, *body])
