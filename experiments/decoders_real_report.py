"""README of ``decoders_real`` (decoders on AntiBERTy CDR-H3 and en-small SNLI), from its records."""

from __future__ import annotations

import json
from pathlib import Path

from mlmprob.runtime.log import read_log

from .ground_truth_chain_plots import mean_se
from .runner import command_lines

REFERENCE = "ancestral random"
TASKS = {
    "antibody": "AntiBERTy, CDR-H3 of Thera-SAbDab heavy chains",
    "english": "en-small, middle words of SNLI premises",
}


def _cell(values: list, digits: int = 3) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    m, se = mean_se(values)
    return f"{m:.{digits}f}" if len(values) < 2 else f"{m:.{digits}f} ± {se:.{digits}f}"


def _table(task: str, recs: list[dict], decoders: dict) -> list[str]:
    nat = {r["input"]: r for r in recs if r["task"] == task and r["unit"].endswith("/native")}
    by: dict[str, dict[int, dict]] = {}
    for r in recs:
        if r["task"] == task and "decoder" in r:
            by.setdefault(r["decoder"], {})[r["input"]] = r
    if not by:
        return []
    ns = [r["n"] for r in nat.values()]
    ref = by.get(REFERENCE, {})
    lines = [
        f"## {task}: {TASKS.get(task, task)}",
        "",
        f"{len(nat)} inputs, {min(ns)}–{max(ns)} free positions (mean {sum(ns) / len(ns):.1f}). Native: stutter "
        f"{_cell([r['stutter'] for r in nat.values()])}, chain-rule log-likelihood per token "
        f"{_cell([r['loglik_per_token'] for r in nat.values()])}.",
        "",
        "| decoder | budget | calls / sample | rows / sample | stutter | stutter − native | loglik / token | "
        f"Δ loglik vs {REFERENCE} | Hamming / n | distinct | inputs |",
        "|---|" + "---|" * 10,
    ]
    names = [n for n in decoders if n in by] + sorted(n for n in by if n not in decoders)
    for name in names:
        rs = by[name]
        ins = sorted(rs)
        excess = [
            rs[i]["stutter"] - nat[i]["stutter"]
            for i in ins
            if rs[i]["stutter"] is not None and i in nat and nat[i]["stutter"] is not None
        ]
        delta = [rs[i]["loglik_per_token"] - ref[i]["loglik_per_token"] for i in ins if i in ref]
        lines.append(
            f"| {name} | {rs[ins[0]]['budget']} | {_cell([rs[i]['calls'] for i in ins], 2)} | "
            f"{_cell([rs[i]['rows_per_sample'] for i in ins], 1)} | {_cell([rs[i]['stutter'] for i in ins])} | "
            f"{_cell(excess)} | {_cell([rs[i]['loglik_per_token'] for i in ins])} | "
            f"{'—' if name == REFERENCE else _cell(delta)} | {_cell([rs[i]['hamming'] for i in ins])} | "
            f"{_cell([rs[i]['distinct'] for i in ins], 2)} | {len(ins)} |"
        )
    return lines + [""]


def write_report(out: Path, decoders: dict) -> None:
    """``README.md`` of the folder from ``results.jsonl``, ``config.json``, ``runs.jsonl`` (and ``notes.md``)."""
    recs = list(read_log(out / "results.jsonl"))
    cfg = json.loads((out / "config.json").read_text())
    cmds = list(read_log(out / "runs.jsonl")) if (out / "runs.jsonl").is_file() else []
    lines = [
        "# Decoders on real models: stutter, likelihood, diversity and cost",
        "",
        f"Each decoder draws {cfg['samples']} samples per input from the all-masked free positions (base seed "
        f"{cfg['seed']}; each unit's generator is seeded from it and the unit's name). `budget`: the sequential "
        "model calls allowed, from the number `n` of free positions (`own`: speculative sampling's, an exact "
        "draw of the ancestral sampler's law in fewer calls; `adaptive`: the dependence-aware decoder's). "
        "`calls`, `rows`: sequential model calls and model rows forwarded per sample (the decoder's own count; "
        "scoring not included). `stutter`: share of adjacent sampled pairs with equal tokens; `stutter − native`: "
        "beyond the native sequence's own rate at the same pairs. `loglik / token`: the model's chain-rule "
        "log-likelihood of the samples per free token (`mlmprob.loglik`, left to right, given the rest); `Δ "
        f"loglik`: paired by input against `{REFERENCE}` (exact samples of the model's `p_mix`): a decoder whose "
        "samples score higher than exact samples is mode-seeking, lower is off the model's distribution. "
        "`Hamming / n`: mean pairwise Hamming distance between an input's samples over its free positions; "
        "`distinct`: share of distinct samples. Cells: mean ± standard error over inputs.",
        "",
        "Commands (module `experiments.decoders_real`):",
        "",
    ]
    lines += command_lines(cmds)
    lines.append("")
    for task in sorted({r["task"] for r in recs}):
        lines += _table(task, recs, decoders)
    notes = out / "notes.md"
    if notes.is_file():
        lines += [notes.read_text()]
    (out / "README.md").write_text("\n".join(lines))
