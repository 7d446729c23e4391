"""The report of ``variants_data``: ``README.md`` from the raw result files (whatever chunks exist).

Library part: for each subsample size reached by some score (a prefix of the ordered library, so
every table compares scores on the same rows) AUROC (binder vs non-binder) and NDCG@10% (gains =
labels) with percentile bootstrap intervals, and AUROC differences to each baseline on the same
resamples; a score *beats* a baseline when that difference's interval lies above 0. Developability
part: Spearman's rho of PLL and PLL per residue with each assay of GDPa1 and Jain-137 (needs the data
folder for the assays), beside sequence-only baselines. ``notes.md`` beside the report, when present,
is included verbatim as the discussion.
"""

from __future__ import annotations

from pathlib import Path

import torch

from experiments.variants_baselines import kd_mean
from mlmprob.errors import MLMProbError
from mlmprob.runtime.log import read_log
from mlmprob.sampling.cdr import find_cdr_h3

from .variants_data_common import RUNS_FILE, load_assay_set, read_library_meta
from .variants_data_stats import (
    JOINT,
    library_table,
    load_scores,
    load_set_scores,
    spearman_interval,
    timings_of_sets,
)

BASELINE_DOC = {
    "blosum62": "sum of BLOSUM62 scores of the substitutions",
    "neg_hamming": "minus the number of mutations (Hamming distance to the wild type)",
    "neg_kd_cdrh3": "minus the mean Kyte-Doolittle hydropathy of the CDR-H3 (less hydrophobic = higher)",
}
LARGE, LARGE_BOOT = 10_000, 200  # tables of more rows: fewer resamples (their intervals are narrow anyway)
SET_TITLES = {"gdpa1": "GDPa1 (v1.2)", "jain": "Jain-137"}


def _pc(n: int, total: int) -> str:
    return f"{n:,} ({n // 2:,} per class)" if 2 * (n // 2) == n and n < total else f"{n:,} (all)"


def _library_section(out: Path, n_boot: int) -> tuple[list[str], list[str]]:
    meta = read_library_meta(out)
    n = meta["n"]
    labels = torch.tensor([int(c) for c in meta["labels"]])
    ks = [int(c, 16) for c in meta["mutations"]]
    scores, timings = load_scores(out, n)
    lines = [
        "## Trastuzumab CDR-H3 library: binder vs non-binder",
        "",
        f"Rows: {meta['rows_pos_file']:,} in AgPos and {meta['rows_neg_file']:,} in AgNeg; after dropping "
        f"duplicates and the {meta['in_both_files_dropped']:,} sequences present in both files, "
        f"{meta['n_pos']:,} binders and {meta['n_neg']:,} non-binders ({n:,} variants). Each class is shuffled "
        f"with `torch.randperm` (seed {meta['seed']}) and the classes interleaved, so the first 2n variants "
        "hold n per class and every smaller subsample is nested in every larger one. Variants carry "
        f"{min(ks)}-{max(ks)} mutations (mean {sum(ks) / n:.2f}; binders "
        f"{sum(k for k, y in zip(ks, labels.tolist()) if y) / max(1, int(labels.sum())):.2f}, non-binders "
        f"{sum(k for k, y in zip(ks, labels.tolist()) if not y) / max(1, n - int(labels.sum())):.2f}).",
        "",
        "Scores are oriented so that higher = predicted binder: every MLM score as `score_variants` returns it "
        "(higher = more likely than the wild type); baselines: "
        + "; ".join(f"`{k}` = {v}" for k, v in BASELINE_DOC.items())
        + ". AUROC below 0.5 means the score "
        "ranks non-binders higher. NDCG@10% uses the labels as gains (1 binder, 0 non-binder); "
        "its value depends on the share of binders in the rows (0.5 in the balanced subsamples, "
        f"{meta['n_pos'] / n:.3f} on all rows). Intervals: 95% percentile bootstrap over {n_boot} "
        f"resamples of the rows ({LARGE_BOOT} for tables of more than {LARGE:,} rows), the same resamples "
        "for every score of a table (the rows are first put in a random order, so that NDCG breaks ties "
        "in a score at random, not by the library's order); "
        "ΔAUROC = AUROC(score) - AUROC(baseline) on those resamples. Binders carry fewer mutations than "
        "non-binders, so the number of mutations alone (`neg_hamming`) separates the classes well; "
        "*AUROC within k* counts only binder / non-binder pairs with the same number of mutations k "
        "(0.5 for any score that only counts mutations), that is, what a score adds beyond it.",
        "",
    ]
    verdict = []
    tiers = sorted({s.prefix for s in scores if s.prefix > 0 and s.model != "baseline"}, reverse=True)
    best_of: dict[str, tuple[int, dict]] = {}
    for rows in tiers:
        nb = n_boot if rows <= LARGE else min(n_boot, LARGE_BOOT)
        res, use = library_table(scores, labels, rows, n_boot=nb, seed=rows, mutations=torch.tensor(ks))
        au, nd, ak = res["auroc"], res["ndcg"], res["auroc_k"]
        base = [s.label for s in use if s.model == "baseline"]
        lines += [
            f"### {_pc(rows, n)} variants",
            "",
            f"Bootstrap: {nb} resamples.",
            "",
            "| score | AUROC [95% CI] | NDCG@10% [95% CI] | AUROC within k [95% CI] | "
            + " | ".join(f"ΔAUROC vs {b}" for b in base)
            + " |",
            "|---|---|---|---|" + "---|" * len(base),
        ]
        for s in sorted(use, key=lambda s: -au.values[s.label]):
            cells = [au.difference(s.label, b).fmt() if s.model != "baseline" else "" for b in base]
            lines.append(
                f"| {s.label} | {au.estimate(s.label).fmt()} | {nd.estimate(s.label).fmt()} | "
                f"{ak.estimate(s.label).fmt()} | " + " | ".join(cells) + " |"
            )
            if s.model != "baseline" and s.prefix == rows:
                best_of[s.label] = (rows, {b: au.difference(s.label, b) for b in base}, ak.estimate(s.label))
        lines.append("")
        verdict += _joint_lines(au, ak, use, rows, n)
    lines += _ag_lines(scores, labels)
    lines += _timing_lines(timings + timings_of_sets(out))
    summary = _verdict_lines(best_of, n)
    return lines, summary + verdict


def _joint_lines(au, ak, use, rows: int, n: int) -> list[str]:
    """Joint scores against the single-site ``masked_marginals`` of the same model on these rows, in
    AUROC and in AUROC within strata of equal mutation count (``ak``)."""
    out = []
    models = sorted({s.model for s in use if s.model != "baseline"})
    for m in models:
        have = {s.method for s in use if s.model == m}
        ref = f"masked_marginals ({m})"
        for j in JOINT:
            key = f"{j} ({m})"
            if not any(s.model == m and s.method == j and s.prefix == rows for s in use):
                continue  # each joint score at its largest subsample only
            if j in have and "masked_marginals" in have and j != "epistasis" and j != "ag":
                d, dk = au.difference(key, ref), ak.difference(key, ref)
                out.append(
                    f"- {_pc(rows, n)}: `{j}` ({m}) is {_word(d)} `masked_marginals` (ΔAUROC {d.fmt()}); "
                    f"within k, {_word(dk)} it (Δ AUROC within k {dk.fmt()})."
                )
            if j == "epistasis" and key in au.values:
                e = au.estimate(key)
                out.append(f"- {_pc(rows, n)}: `epistasis` ({m}) alone has AUROC {e.fmt()}.")
    return out


def _word(d) -> str:
    return "better than" if d.above_zero else "worse than" if d.below_zero else "not distinguishable from"


def _verdict_lines(best_of: dict, n: int) -> list[str]:
    out = [
        "Each score at its largest subsample, against each baseline on the same rows "
        "(beats = ΔAUROC interval above 0; loses = below 0; tie = interval holds 0):",
        "",
    ]
    for label, (rows, diffs, within) in sorted(best_of.items()):
        parts = []
        for word, test in (
            ("beats", lambda d: d.above_zero),
            ("loses to", lambda d: d.below_zero),
            ("ties", lambda d: not d.above_zero and not d.below_zero),
        ):
            hit = [b for b, d in diffs.items() if test(d)]
            if hit:
                parts.append(f"{word} {', '.join(hit)}")
        side = "above" if within.low > 0.5 else "below" if within.high < 0.5 else "not distinguishable from"
        out.append(
            f"- `{label}` on {_pc(rows, n)}: {'; '.join(parts)}. Within strata of equal mutation count: "
            f"AUROC {within.fmt()}, {side} 0.5."
        )
    return out + [""]


def _ag_lines(scores, labels) -> list[str]:
    ag = [s for s in scores if s.method == "ag"]
    out = []
    for s in ag:
        rows = torch.isfinite(s.values).nonzero()[:, 0]
        y = labels[rows]
        out.append(
            f"`ag` ({s.model}) applies to double mutants only: the library holds {len(rows)} "
            f"scored double mutants ({int(y.sum())} binders, {len(rows) - int(y.sum())} non-binders), "
            "too few for any metric; its scores are in the raw file and it is left out of the tables."
        )
    return out + ([""] if out else [])


def _timing_lines(timings) -> list[str]:
    lines = [
        "## Time per method",
        "",
        "Wall and CPU seconds summed over the chunks (2 torch threads and `nice -n 5`, 1 thread for `chain` "
        "and `*_loglik`, on a 2-core machine shared with other jobs, so wall time overstates the cost); forward rows estimated from the cost model of "
        "`score_variants` (the wild-type rows a `ForwardCache` keeps counted once).",
        "",
        "| model | group | variants / antibodies | wall s | CPU s | wall s per item | forward rows (est.) | rows / wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in timings:
        per = t.seconds / t.variants if t.variants else float("nan")
        rate = t.rows_est / t.seconds if t.seconds and t.rows_est else float("nan")
        lines.append(
            f"| {t.model} | {t.group} | {t.variants:,} | {t.seconds:.1f} | {t.cpu_seconds:.1f} | "
            f"{per:.4f} | {t.rows_est:,} | {rate:.1f} |"
        )
    return lines + [""]


def _set_baselines(abs_) -> dict[str, list]:
    def cdr(vh):
        try:
            s, e = find_cdr_h3(vh)
            return vh[s:e]
        except MLMProbError:
            return None

    cdrs = [cdr(a.vh) for a in abs_]
    return {
        "VH length": [float(len(a.vh)) for a in abs_],
        "CDR-H3 length": [None if c is None else float(len(c)) for c in cdrs],
        "CDR-H3 KD": [None if not c else kd_mean(c) for c in cdrs],
        "VH KD": [kd_mean(a.vh) for a in abs_],
    }


def _sets_section(out: Path, data: Path | None, n_boot: int) -> list[str]:
    pll = {(s, m, "PLL"): d for (s, m), d in load_set_scores(out, "pll").items()}
    pll.update({(s, m, "LL l2r"): d for (s, m), d in load_set_scores(out, "loglik").items()})
    lines = [
        "## Developability: GDPa1 and Jain-137",
        "",
        "Spearman's rho (95% bootstrap interval, n = antibodies with both values) of the VH pseudo-log-likelihood "
        "(PLL, every residue masked in turn), of the chain-rule log-likelihood of the VH read left to right "
        "(LL l2r: `mlmprob.loglik`, order l2r, each step normalised over the 20 residues; a normalised "
        "likelihood, unlike PLL) and of each per residue with each assay, beside sequence-only "
        "baselines: VH length, CDR-H3 length (IMGT, `find_cdr_h3`), mean Kyte-Doolittle hydropathy of the "
        "CDR-H3 and of the VH. pll_delta to the germline-closest sequence is **not available**: the data "
        "hold no germline sequences and none are installed, so that column is absent.",
        "",
    ]
    if data is None:
        return lines + ["(The data folder was not given, so the assays could not be read: pass --data.)", ""]
    for name in ("gdpa1", "jain"):
        abs_, assays = load_assay_set(data, name)
        cols: dict[str, list] = {}
        for (set_name, model, what), d in sorted(pll.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] != "PLL")):
            if set_name != name:
                continue
            cols[f"{what} ({model})"] = [d[a.id][0] if a.id in d else None for a in abs_]
            cols[f"{what}/L ({model})"] = [d[a.id][0] / d[a.id][1] if a.id in d else None for a in abs_]
        scored = {k: sum(v is not None for v in vals) for k, vals in cols.items()}
        cols.update(_set_baselines(abs_))
        lines += [f"### {SET_TITLES[name]}: {len(abs_)} antibodies with a standard-residue VH", ""]
        if scored:
            lines += ["Scored by the models: " + ", ".join(f"{k} {v}" for k, v in scored.items()) + ".", ""]
        lines += ["| assay | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
        for a in assays:
            y = [ab.assays[a] for ab in abs_]
            cells = []
            for vals in cols.values():
                est, k = spearman_interval(vals, y, n_boot=n_boot)
                cells.append(f"{est.fmt(2)} (n={k})")
            lines.append(f"| {a} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _commands(out: Path) -> list[str]:
    path = out / RUNS_FILE
    lines = [
        "## Commands",
        "",
        "Runs recorded in `raw/runs.jsonl` (each start, and each finish; a start without a "
        "finish was stopped and later resumed; the stage plan of each run is recorded there too):",
        "",
        "```",
    ]
    if path.exists():
        for r in read_log(path):
            extra = (
                f"  # finished, {r['wall_s']} s" if r.get("event") == "finish" else f"  # started {r.get('started')}"
            )
            lines.append(r["command"] + extra)
    return lines + [
        "```",
        "",
        "The report: `python -m experiments.variants_data --out docs/results/variants/raw "
        "--report-only --data DATA` (DATA: the shared data folder, for the assays of the developability "
        "sets).",
        "",
    ]


def write_report(out: Path, report: Path, *, data: Path | None = None, n_boot: int = 1000) -> Path:
    """Write the report of the result files in ``out`` to ``report``."""
    out, report = Path(out), Path(report)
    lib_lines, verdict = _library_section(out, n_boot)
    notes = report.parent / "notes.md"
    text = [
        "# Variant effects and developability on real data (issue 13, section 3)",
        "",
        "Generated by `python -m experiments.variants_data --report-only` from the files in `raw/`; "
        "the numbers below are those measured there.",
        "",
    ]
    if notes.exists():
        text += ["## Verdict", "", notes.read_text().strip(), ""]
    text += ["## Automatic comparison", ""] + verdict + [""] + lib_lines + _sets_section(out, data, n_boot)
    text += _commands(out)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(text).rstrip() + "\n")
    return report
