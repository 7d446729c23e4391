"""The infilling runner's tables (markdown) from its JSONL records: means per (model, region, method,
gap length) and the shapes of the paper's Tables 1-3, with Table 4, HCB vs standard on the same gaps
(``infill_paired``). See ``infill_runner`` for the records.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .infill_choices import ABLATIONS, BEAM_METHODS, LABELS, METHODS, METRICS, is_english
from .infill_paired import paired_comparisons, paired_markdown


def metric_means(records: Iterable[dict]) -> dict[tuple, dict[str, float]]:
    """Means of every metric per (model, region, method, k), with the count ``n``."""
    acc: dict[tuple, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in records:
        key = (r["model"], r["region"], r["method"], int(r["k"]))
        acc[key]["n"] += 1
        for m in METRICS:
            acc[key][m] += float(r[m])
    return {key: {m: (v if m == "n" else v / d["n"]) for m, v in d.items()} for key, d in acc.items()}


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.2f}"


def _md(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _present(summary, axis: int) -> list:
    vals = {key[axis] for key in summary}
    if axis == 2:
        return [m for m in METHODS if m in vals]
    return sorted(vals)


def table_methods_by_k(
    summary: dict, model: str, region: str, metrics=("top1", "top5", "top10", "top20", "bleu", "identity")
) -> str:
    """Table 1 shape: rows methods, columns (metric, k); values in percent."""
    ks = sorted({key[3] for key in summary if key[0] == model and key[1] == region})
    methods = [m for m in _present(summary, 2) if any((model, region, m, k) in summary for k in ks)]
    header = ["Method"] + [f"{metric} k={k}" for metric in metrics for k in ks]
    rows = [
        [LABELS.get(m, m)]
        + [_fmt(summary.get((model, region, m, k), {}).get(metric)) for metric in metrics for k in ks]
        for m in methods
    ]
    return _md(header, rows)


def _mean_over_k(summary: dict, model: str, region: str, method: str, metric: str) -> float | None:
    vals = [d[metric] for (mo, re, me, _), d in summary.items() if (mo, re, me) == (model, region, method)]
    return sum(vals) / len(vals) if vals else None


def table_models(summary: dict, region: str, metric: str = "top1", methods: Iterable[str] | None = None) -> str:
    """Table 2 shape: rows methods, columns models; ``metric`` averaged over the gap lengths."""
    models = _present(summary, 0)
    methods = [m for m in (methods or _present(summary, 2)) if any(k[2] == m and k[1] == region for k in summary)]
    rows = [[LABELS.get(m, m)] + [_fmt(_mean_over_k(summary, mo, region, m, metric)) for mo in models] for m in methods]
    return _md(["Method"] + models, rows)


def table_ablations(summary: dict, region: str, metric: str = "top1") -> str:
    """Table 3 shape: HCB, standard and ablation rows x models."""
    return table_models(summary, region, metric, methods=list(BEAM_METHODS) + list(ABLATIONS))


def unit_of(datasets: Iterable[str]) -> str:
    """What a gap is made of: ``residues`` (antibody), ``tokens`` (English) or both.

    >>> unit_of(["snli"]), unit_of(["gdpa1"]), unit_of(["gdpa1", "xsum"])
    ('tokens', 'residues', 'residues or tokens')
    """
    kinds = {"tokens" if is_english(d) else "residues" for d in datasets}
    return " or ".join(sorted(kinds)) if kinds else "residues"


def tables_markdown(records: list[dict]) -> str:
    """The tables of ``records``; one set per dataset when they come from several."""
    by_dataset: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_dataset[r.get("dataset", "")].append(r)
    if len(by_dataset) > 1:
        return "\n".join(_tables_one(recs, f"# Infilling results - {ds}") for ds, recs in sorted(by_dataset.items()))
    return _tables_one(records, "# Infilling results")


def _tables_one(records: list[dict], title: str) -> str:
    summary = metric_means(records)
    unit = unit_of({r["dataset"] for r in records if "dataset" in r})
    parts = [
        title,
        "",
        f"Values in percent. Table 1: methods x number of missing {unit}; Table 2: models side by side "
        "(top-1 averaged over gap lengths); Table 3: ablations; Table 4: HCB vs standard beam search "
        "on the same gaps (all gap lengths pooled; p: exact two-sided sign test on the gaps only one "
        "of them gets right).",
        "",
    ]
    paired_all = paired_comparisons(records)
    for region in _present(summary, 1):
        for model in _present(summary, 0):
            n = {d["n"] for key, d in summary.items() if key[0] == model and key[1] == region}
            if not n:
                continue  # no record of this model in this region (yet)
            parts += [
                f"## Table 1 - {model}, {region} gaps (n per cell: {', '.join(str(int(x)) for x in sorted(n))})",
                "",
                table_methods_by_k(summary, model, region),
                "",
            ]
        parts += [f"## Table 2 - top-1 accuracy, {region} gaps", "", table_models(summary, region), ""]
        parts += [f"## Table 3 - ablations (top-1), {region} gaps", "", table_ablations(summary, region), ""]
        paired = [c for c in paired_all if c.region == region]
        if paired:
            parts += [f"## Table 4 - HCB vs standard on the same gaps, {region} gaps", "", paired_markdown(paired), ""]
    return "\n".join(parts)
