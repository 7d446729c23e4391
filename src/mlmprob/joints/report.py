"""The report of the pairwise-joint experiment: Table 1 (U-PPL, P-PPL, A-KL, G-KL per method and
pair scheme), diagnostics, ``summary.json`` and the token-distance plot of App. E."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..errors import MLMProbError
from ..joints.constructions import METHOD_LABELS
from ..joints.metrics import JointSummary, summarize
from ..jsonl import dumps

REPORT_FILE, SUMMARY_FILE, PLOT_FILE = "report.md", "summary.json", "distance.png"
SUMMARY_NULLS = (
    "null: U-PPL/P-PPL are infinite when a gold pair lies outside the candidate vocabulary "
    "(see n_covered); G-KL, A-KL and rates are undefined without pairs to average"
)


def _by_scheme(records: Sequence[dict]) -> dict[str, list[dict]]:
    return {s: [r for r in records if r["scheme"] == s] for s in dict.fromkeys(r["scheme"] for r in records)}


def summarize_records(records: Sequence[dict]) -> dict[str, dict[str, JointSummary]]:
    """scheme -> method -> Table-1 metrics."""
    groups = _by_scheme(records).items()
    return {s: {m: summarize(r["metrics"][m] for r in rs) for m in METHOD_LABELS} for s, rs in groups}


def diagnostics(records: Sequence[dict]) -> dict[str, dict[str, float]]:
    """scheme -> mean CI gap, incompatibility, AG steps, coverage, truncation and speed."""
    out = {}
    for scheme, rs in _by_scheme(records).items():
        n = len(rs)
        mean = lambda xs: sum(xs) / len(xs) if xs else math.nan  # noqa: E731
        secs = sum(r["seconds"] for r in rs)
        out[scheme] = {
            "pairs": n,
            "ci_gap": mean([r["ci_gap"] for r in rs]),
            "incompatibility": mean([r["incompatibility"] for r in rs]),
            "ag_steps_mean": mean([r["ag_steps"] for r in rs]),
            "ag_steps_max": max(r["ag_steps"] for r in rs),
            "ag_not_converged": sum(not r["ag_converged"] for r in rs),
            "gold_covered": sum(r["gold_in_candidates"] for r in rs),
            "K_mean": mean([r["K"] for r in rs]),
            "forward_rows_per_pair": mean([r["n_forward"] for r in rs]),
            "outside_mass_unary": mean([r["outside_mass"]["unary"] for r in rs]),
            "outside_mass_marginal": mean([r["outside_mass"]["marginal"] for r in rs]),
            "pairs_per_s": n / secs if secs > 0 else math.nan,
        }
    return out


def _fmt(x: float) -> str:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    if x != 0 and abs(x) < 0.01:
        return f"{x:.1e}"
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.2f}"


def format_report(records: Sequence[dict], title: str = "Pairwise joints") -> str:
    """Markdown: Table 1 (methods x U-PPL, P-PPL, A-KL, G-KL per scheme) and the diagnostics."""
    summ = summarize_records(records)
    schemes = list(summ)
    cols = ["U-PPL", "P-PPL", "A-KL", "G-KL"]
    lines = [
        f"# {title}",
        "",
        "Lower is better everywhere. U-PPL/P-PPL: unary/pairwise perplexity; "
        "A-KL/G-KL: KL from the MLM's unary conditionals to the joint's (all / gold conditioning values).",
        "",
    ]
    head = "| method | " + " | ".join(f"{s} {c}" for s in schemes for c in cols) + " |"
    lines += [head, "|" + "---|" * (1 + len(cols) * len(schemes))]
    for m, label in METHOD_LABELS.items():
        cells = [_fmt(summ[s][m].as_dict()[c]) for s in schemes for c in cols]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    diag = diagnostics(records)
    keys = list(next(iter(diag.values())).keys()) if diag else []
    lines += [
        "",
        "Diagnostics: ci_gap = the MLM's conditional-independence gap (mutual information its unary "
        "conditionals express); incompatibility = A-KL of the AG joint (0 iff the unary families are "
        "compatible); outside_mass = softmax mass outside the candidate vocabulary.",
        "",
        "| scheme | " + " | ".join(keys) + " |",
        "|" + "---|" * (1 + len(keys)),
    ]
    for s, d in diag.items():
        lines.append(
            f"| {s} | " + " | ".join(_fmt(float(d[k])) if isinstance(d[k], float) else str(d[k]) for k in keys) + " |"
        )
    return "\n".join(lines) + "\n"


def write_report(records: Sequence[dict], out_dir: str | Path, title: str = "Pairwise joints") -> dict[str, Path]:
    """Write ``report.md``, ``summary.json`` and ``distance.png`` into ``out_dir``."""
    from .plots import plot_distance

    out = Path(out_dir)
    if not records:
        raise MLMProbError(f"no pair records to report in {out}")
    (out / REPORT_FILE).write_text(format_report(records, title))
    summ = {s: {m: v.as_dict() for m, v in d.items()} for s, d in summarize_records(records).items()}
    summary = {"table": summ, "diagnostics": diagnostics(records)}
    if "null" in dumps(summary):
        summary["null_means"] = SUMMARY_NULLS
    (out / SUMMARY_FILE).write_text(dumps(summary, indent=2))
    plot_distance(records, out / PLOT_FILE, title=title)
    return {"report": out / REPORT_FILE, "summary": out / SUMMARY_FILE, "plot": out / PLOT_FILE}
