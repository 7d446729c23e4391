"""Paired comparison of two infilling methods on the same gaps (HCB vs standard beam search).

Means over a few hundred gaps differ by a few points between HCB and standard beam search; whether
such a difference is more than chance is a question about the gaps where the two disagree. For every
(model, region, order) this counts, over the gaps both methods have a record for, the gaps where only
HCB's top fill is the true one and those where only standard's is, and gives the exact two-sided
sign test (McNemar's exact test) of "neither method is more often right alone".

>>> exact_sign_test(0, 10) < 0.002 < exact_sign_test(1, 9)
True
>>> exact_sign_test(4, 4)
1.0
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from mlmprob.metrics.significance import exact_sign_test

ORDERS = ("l2r", "best")


def discordant(pairs: Iterable[tuple[dict, dict]]) -> tuple[int, int]:
    """``(only_a, only_b)``: pairs of records ``(a, b)`` of one gap where only a's (only b's) top fill is right.

    >>> discordant([({"top1": 1.0}, {"top1": 0.0}), ({"top1": 1.0}, {"top1": 1.0})])
    (1, 0)
    """
    only_a = only_b = 0
    for ra, rb in pairs:
        only_a += ra["top1"] > rb["top1"]
        only_b += ra["top1"] < rb["top1"]
    return only_a, only_b


@dataclass(frozen=True)
class PairedComparison:
    """Method ``a`` vs method ``b`` over the gaps both were run on, for one (model, region, order)."""

    model: str
    region: str
    order: str
    n_gaps: int
    same_top_fill: int  # gaps where both return the same best fill
    only_a: int  # gaps where only a's best fill is the true one
    only_b: int  # gaps where only b's best fill is the true one
    top1_a: float  # mean top-1 accuracy of a over the paired gaps
    top1_b: float

    @property
    def p_value(self) -> float:
        return exact_sign_test(self.only_a, self.only_b)


def paired_comparisons(records: Iterable[dict], a: str = "hcb", b: str = "standard") -> list[PairedComparison]:
    """One ``PairedComparison`` per (model, region, order) with records of both ``a-<order>`` and ``b-<order>``.

    Gaps are matched on (model, dataset, region, k, gap_id); every gap length is pooled.
    """
    wanted = {f"{m}-{o}": (m, o) for m in (a, b) for o in ORDERS}
    by_gap: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for r in records:
        if r["method"] in wanted:
            m, o = wanted[r["method"]]
            key = (r["model"], r["region"], o, r.get("dataset", ""), int(r["k"]), r["gap_id"])
            by_gap[key][m] = r
    groups: dict[tuple, list[tuple[dict, dict]]] = defaultdict(list)
    for key, pair in by_gap.items():
        if len(pair) == 2:
            groups[key[:3]].append((pair[a], pair[b]))
    out = []
    for (model, region, order), pairs in sorted(groups.items(), key=lambda kv: (kv[0][:2], ORDERS.index(kv[0][2]))):
        n = len(pairs)
        only_a, only_b = discordant(pairs)
        out.append(
            PairedComparison(
                model,
                region,
                order,
                n,
                same_top_fill=sum(ra["fills"][0] == rb["fills"][0] for ra, rb in pairs if ra["fills"] and rb["fills"]),
                only_a=only_a,
                only_b=only_b,
                top1_a=sum(ra["top1"] for ra, _ in pairs) / n,
                top1_b=sum(rb["top1"] for _, rb in pairs) / n,
            )
        )
    return out


def paired_markdown(comparisons: list[PairedComparison], a: str = "HCB", b: str = "standard") -> str:
    """A markdown table of ``comparisons`` (accuracies in percent)."""
    header = [
        "model",
        "region",
        "order",
        "gaps",
        "same top fill",
        f"only {a} right",
        f"only {b} right",
        f"{a} top-1",
        f"{b} top-1",
        "sign test p",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for c in comparisons:
        lines.append(
            f"| {c.model} | {c.region} | {c.order} | {c.n_gaps} | {c.same_top_fill} | {c.only_a} | "
            f"{c.only_b} | {100 * c.top1_a:.2f} | {100 * c.top1_b:.2f} | {c.p_value:.2g} |"
        )
    return "\n".join(lines)
