"""Tables (markdown) and the figure of the side-by-side bench, from the JSONL rows of toy_tv.py and antibody.py:
the tables go into the report (``README.md`` of the folder) between their ``<!-- toy table -->`` /
``<!-- antibody table -->`` (and, for ``antibody_vh.jsonl``, ``<!-- antibody vh table -->`` /
``<!-- antibody vh summary -->``: per seed, and the mean and range over seeds) markers and their closing ``<!-- end -->``; the figure is ``design_bench.png``.

python bench/design/report.py docs/results/design
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def f(x, nd=3):
    return "–" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def toy_table(toy: list[dict]) -> str:
    head = (
        "| case | EvoProtGrad steps (budget) | tool | steps | model rows | wall s | samples | TV to its target | "
        "TV of as many iid draws | TV to the other tool's target | states changed per step | outside free positions |"
    )
    out = [head, "|" + "---|" * 12]
    for r in toy:
        out.append(
            f"| {r['case']} | {r['evo_steps']} | {r['tool']} | {r['steps']} | {r['model_rows']:,} | "
            f"{f(r['wall_s'], 1)} | "
            f"{r['samples']:,} | **{f(r['tv'])}** | {f(r['tv_iid'])} | {f(r['tv_to_other_target'])} | "
            f"{f(r.get('state_changed_rate'), 2)} | {f(r.get('outside_free_positions'), 5)} |"
        )
    return "\n".join(out)


def ab_table(ab: list[dict]) -> str:
    head = (
        "| run | tool | steps/chain | model rows | backward passes | oracle calls | wall s | judge P(bind) | "
        "judge binders | PLL/residue | diversity (Hamming) | mutations | with a liability | `NG` / `DG` / `N[^P][ST]` |"
    )
    out = [head, "|" + "---|" * 14]
    for r in ab:
        lia = r.get("liabilities", {})
        out.append(
            f"| {r['run']} | {r['tool']} | {r.get('steps', '–')} | {f(r.get('model_rows'))} | "
            f"{f(r.get('backward_passes'))} | {f(r.get('oracle_calls'))} | {f(r.get('wall_s'), 1)} | "
            f"{f(r['judge_p_bind'])} | {f(r['judge_frac_bind'], 2)} | {f(r['pll_per_residue'])} | "
            f"{f(r['diversity_hamming'], 2)} | {f(r['mutations'], 2)} | {f(r['frac_with_liability'], 2)} | "
            f"{lia.get('deamidation', '–')} / {lia.get('isomerization', '–')} / {lia.get('glycosylation', '–')} |"
        )
    return "\n".join(out)


SUMMARY = (
    ("steps", "steps/chain", 0),
    ("model_rows", "model rows", 0),
    ("wall_s", "wall s", 0),
    ("judge_p_bind", "judge P(bind)", 3),
    ("judge_frac_bind", "judge binders", 2),
    ("pll_per_residue", "PLL/residue", 3),
    ("diversity_hamming", "diversity (Hamming)", 2),
    ("mutations", "mutations", 2),
    ("frac_with_liability", "with a liability", 2),
)


def seed_summary(ab: list[dict]) -> str:
    """Per run (its name before ``@``): the mean over seeds and, in parentheses, the range (no square brackets:
    mkdocs' autorefs would read them as references)."""
    groups: dict[str, list[dict]] = {}
    for r in ab:
        groups.setdefault(r["run"].split("@")[0], []).append(r)
    out = ["| run | seeds | " + " | ".join(h for _, h, _ in SUMMARY) + " |", "|" + "---|" * (len(SUMMARY) + 2)]
    for name, rs in groups.items():
        cells = []
        for key, _, nd in SUMMARY:
            v = [float(r[key]) for r in rs if r.get(key) is not None]
            if not v:
                cells.append("–")
                continue
            m = f"{sum(v) / len(v):,.{nd}f}"
            cells.append(m if len(v) == 1 or min(v) == max(v) else f"{m} ({min(v):,.{nd}f} to {max(v):,.{nd}f})")
        out.append(f"| {name} | {len(rs)} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def figure(toy: list[dict], ab: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"evoprotgrad": "tab:orange", "mlmprob": "tab:blue", "parent": "black"}
    cases = sorted({r["case"] for r in toy})
    for r in toy:
        x = cases.index(r["case"]) * 3 + (0 if r["evo_steps"] == min(q["evo_steps"] for q in toy) else 1)
        dx = -0.18 if r["tool"] == "evoprotgrad" else 0.18
        a.bar(x + dx, r["tv"], width=0.34, color=colors[r["tool"]], label=r["tool"])
        a.plot([x + dx - 0.17, x + dx + 0.17], [r["tv_iid"]] * 2, color="k", lw=1.5)
    ticks = [
        (cases.index(c) * 3 + i, f"{c}\n{s} steps")
        for c in cases
        for i, s in enumerate(sorted({q["evo_steps"] for q in toy}))
    ]
    a.set_xticks([t for t, _ in ticks], [n for _, n in ticks], fontsize=8)
    a.set_ylabel("TV to the target the tool states")
    a.set_title("Enumerable toy (20^3 states), same model rows\nblack line: TV of as many exact iid draws", fontsize=9)
    handles, labels = a.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    a.legend(unique.values(), unique.keys(), fontsize=8)
    for r in ab:
        b.scatter(
            r["pll_per_residue"], r["judge_p_bind"], s=40 + 200 * r["frac_with_liability"], color=colors[r["tool"]]
        )
        b.annotate(
            f"{r['run']} ({f(r['frac_with_liability'], 2)} liab.)",
            (r["pll_per_residue"], r["judge_p_bind"]),
            fontsize=7,
        )
    b.set_xlabel("AntiBERTy PLL per residue")
    b.set_ylabel("judge's P(bind HER2), held-out half")
    b.set_title("Trastuzumab CDR-H3 free (marker size: share with a liability)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(folder: str) -> None:
    d = Path(folder)
    toy, ab, vh = rows(d / "toy.jsonl"), rows(d / "antibody.jsonl"), rows(d / "antibody_vh.jsonl")
    report = d / "README.md"
    text = report.read_text()
    tables = [("<!-- toy table -->", toy_table(toy)), ("<!-- antibody table -->", ab_table(ab))]
    if vh and "<!-- antibody vh table -->" in text:
        tables += [("<!-- antibody vh table -->", ab_table(vh)), ("<!-- antibody vh summary -->", seed_summary(vh))]
    for marker, table in tables:
        a = text.index(marker) + len(marker)
        b = text.index("<!-- end -->", a)
        text = text[:a] + "\n" + table + "\n" + text[b:]
        print(table)
    report.write_text(text)
    figure(toy, ab, d / "design_bench.png")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/results/design")
