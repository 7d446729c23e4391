"""The token-distance analysis of App. E: pairwise NLL per distance bin, one line per method, with
the number of pairs per bin as gray bars."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..joints.constructions import METHOD_LABELS as LABELS

DISTANCE_BINS = ((0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 9), (10, 19), (20, 39), (40, 79), (80, 10**9))


def bin_label(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else (f"{lo}+" if hi >= 10**9 else f"{lo}-{hi}")


def pnll_by_distance(
    records: Sequence[dict], bins=DISTANCE_BINS
) -> tuple[list[str], list[int], dict[str, list[float]]]:
    """``(bin labels, counts, method -> PNLL per bin)``; PNLL = ``-sum log q(w_a, w_b) / 2n`` over the
    bin's pairs (the log of its P-PPL); NaN for empty bins."""
    labels: list[str] = []
    counts: list[int] = []
    out: dict[str, list[float]] = {m: [] for m in LABELS}
    for lo, hi in bins:
        rs = [r for r in records if lo <= r["distance"] <= hi]
        labels.append(bin_label(lo, hi))
        counts.append(len(rs))
        for m in LABELS:
            out[m].append(-sum(r["metrics"][m]["pair_logp"] for r in rs) / (2 * len(rs)) if rs else math.nan)
    return labels, counts, out


def plot_distance(records: Sequence[dict], path: str | Path, title: str = "") -> Path:
    """Save the App. E plot (PNG) of ``records`` to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, counts, pnll = pnll_by_distance(records)
    keep = [i for i, c in enumerate(counts) if c > 0]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax2 = ax.twinx()
    x = list(range(len(keep)))
    ax2.bar(x, [counts[i] for i in keep], color="0.85", zorder=0)
    ax2.set_ylabel("pairs")
    ax.set_zorder(ax2.get_zorder() + 1)
    ax.patch.set_visible(False)
    for m, label in LABELS.items():
        ax.plot(x, [pnll[m][i] for i in keep], marker="o", label=label)
    ax.set_xticks(x, [labels[i] for i in keep])
    ax.set_xlabel("token distance between the masked positions (0 = adjacent)")
    ax.set_ylabel("pairwise NLL (log P-PPL)")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
