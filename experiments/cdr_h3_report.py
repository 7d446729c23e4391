"""Report of the CDR-H3 experiments (``cdr_h3``): Markdown tables in the shapes of Goyal et al.
(2022) Tables 1-5 (mean ± standard error over chains) and PNG figures in the shapes of their
Figures 1, 2 and 4 (energy / acceptance / identity vs epoch), from ``results.jsonl`` alone.

Conventions: epoch 0 in the figures is the warm start, epoch ``e`` the state after the ``e``-th
sweep; "post" values average the epochs after burn-in (the paper's "across interleaved epochs"),
acceptance and novel rates weighted by the number of proposals; "final" values are the last
epoch's. BLEU-4 is corpus BLEU over all chains (and, for "post", all post-burn-in epochs).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from mlmprob.runtime.log import read_log

from .cdr_h3_common import ANNEALS, RESULTS_FILE, RUNS_FILE, T5_ANNEAL, TABLES, RunOptions, read_results
from .cdr_h3_tables import (
    RecordsByConfig,
    _table,
    mean_se,
    table1,
    table2,
    table3,
    table4,
    table5,
    table6,
    table_uncond,
)

REPORT_FILE, NOTES_FILE, ANTIBODIES_FILE = "report.md", "notes.md", "antibodies.json"
ANCESTRAL_NOTE = (
    "Ancestral rows: every epoch is an independent exact draw of the chain-rule distribution `p_sigma` of "
    "`mlmprob.loglik` (l2r: one fixed order; random: a fresh uniform order per chain and epoch, a draw of the "
    "mixture over orders), the CDR-H3 masked anew and revealed one residue at a time from the model's conditionals "
    "at temperature 1 (no warm start, no accept step: acceptance and novel rate do not apply). `log p_sigma`: the "
    "draw's log-probability along its order. Pairwise distance: mean share of CDR-H3 positions where two chains of "
    "an antibody differ at the same post-burn-in epoch; distinct: distinct CDR-H3s among all of an antibody's "
    "post-burn-in designs (both mean ± SE over antibodies). Model rows are those the sampler counts: MH's include its "
    "energy evaluations; degenerate Gibbs and ancestral sampling spend as many rows again per epoch on the energy "
    "trace (`E_local` of each state), which is in their wall time but not in their rows."
)


# -- figures ---------------------------------------------------------------------------------------


def _figure(panels: int):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2 * panels, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, panels)
    return fig, list(axes) if panels > 1 else [axes]


def _line(ax, res: RecordsByConfig, name: str, key: str, label: str, **kw) -> bool:
    xs, ms, ses = res.trace(name, key)
    if not xs:
        return False
    ax.plot(xs, ms, marker="o", markersize=3, label=label, **kw)
    ax.fill_between(
        xs,
        [m - s for m, s in zip(ms, ses)],
        [m + s for m, s in zip(ms, ses)],
        alpha=0.15,
        color=ax.lines[-1].get_color(),
        linewidth=0,
    )
    return True


def _finish(fig, axes, burn_in: int, path: Path, title: str) -> Path | None:
    if not any(ax.lines for ax in axes):
        return None
    from matplotlib.ticker import MaxNLocator

    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.axvline(burn_in + 0.5, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("epoch (0 = warm start; dotted: end of burn-in)")
        if ax.lines:
            ax.legend(fontsize="small")
    fig.suptitle(title, fontsize="medium")
    fig.savefig(path, dpi=100)
    return path


def figure1(res: RecordsByConfig, burn_in: int, path: Path) -> Path | None:
    """E_local, identity and BLEU vs epoch for MH-local, MH-raw and degenerate Gibbs (T=1.0)."""
    fig, axes = _figure(3)
    lines = [
        ("t1/mh-local-pt1.0", "MH norm (E_local)"),
        ("f1/mh-raw-pt1.0", "MH raw (E_raw)"),
        ("t1/gibbs-pt1.0", "deg (Gibbs)"),
    ]
    for c, label in lines:
        _line(axes[0], res, c, "e_local", label)
        _line(axes[1], res, c, "identity", label)
        if res.has(c):
            E = len(res.by_config[c][0]["per_epoch"]["cdr"])
            axes[2].plot(range(E + 1), [res.bleu_at(c, e) for e in range(E + 1)], marker="o", markersize=3, label=label)
    axes[0].set_ylabel("E_local over CDR-H3 (lower is better)")
    axes[1].set_ylabel("identity to native CDR-H3")
    axes[2].set_ylabel("BLEU-4 to native CDR-H3 (corpus)")
    return _finish(fig, axes, burn_in, path, "Figure 1 shape: samplers at proposal T=1.0")


def figure2(res: RecordsByConfig, burn_in: int, path: Path) -> Path | None:
    """Acceptance, E_local and identity vs epoch for annealed MH (local and raw targets)."""
    fig, axes = _figure(3)
    colors = {"local": "tab:blue", "raw": "tab:red"}
    styles = dict(zip(ANNEALS, ("-", "--", ":")))
    for r in ANNEALS:
        for e in ("local", "raw"):
            c = f"t4/anneal{r}-mh-{e}"
            kw = dict(color=colors[e], linestyle=styles[r])
            _line(axes[0], res, c, "accept", f"{e}, anneal {r}", **kw)
            _line(axes[1], res, c, "e_local", f"{e}, anneal {r}", **kw)
            _line(axes[2], res, c, "identity", f"{e}, anneal {r}", **kw)
    axes[0].set_ylabel("acceptance rate")
    axes[1].set_ylabel("E_local over CDR-H3")
    axes[2].set_ylabel("identity to native CDR-H3")
    return _finish(fig, axes, burn_in, path, "Figure 2 shape: MH with target-temperature annealing")


def figure4(res: RecordsByConfig, burn_in: int, path: Path) -> Path | None:
    """Acceptance and novel rates vs epoch for the block samplers (block size 4 -> 1)."""
    fig, axes = _figure(2)
    for c, label in (
        ("t3/block-mh-raw", "block MH raw"),
        ("t3/block-mh-local", "block MH norm"),
        ("t3/block-gibbs", "block deg"),
    ):
        _line(axes[0], res, c, "accept", label)
        _line(axes[1], res, c, "novel", label)
    axes[0].set_ylabel("acceptance rate")
    axes[1].set_ylabel("novel-transition rate")
    rs = res.by_config.get("t3/block-mh-local") or res.by_config.get("t3/block-gibbs")
    sizes = rs[0]["per_epoch"]["block_size"] if rs else []
    return _finish(fig, axes, burn_in, path, f"Figure 4 shape: block samplers, block size per epoch {sizes}")


# -- report ----------------------------------------------------------------------------------------


def _runs(out: Path) -> list[dict]:
    return list(read_log(out / RUNS_FILE))


def _setup_section(model: str, opts: RunOptions, antibodies: list[dict] | None) -> list[str]:
    """The introduction and the ``## Setup`` section."""
    E = opts.total_epochs
    return [
        "Generated by `python -m experiments.cdr_h3` (module `experiments.cdr_h3`, report "
        "`experiments.cdr_h3_report`) from `results.jsonl` in this folder. Shapes follow Goyal et al. "
        "(2022), Tables 1-5 and Figures 1, 2, 4, with CDR-H3 redesign in place of translation.",
        "",
        "## Setup",
        "",
        f"- Model `{model}`; heavy chains from `thera_sabdab.csv` (column `HC`), the first "
        f"{len(antibodies) if antibodies else '?'} in file order whose CDR-H3 `find_cdr_h3` (IMGT) locates; "
        "CDR-H3 free, everything else clamped, CDR-H3 length kept.",
        f"- {opts.chains} chains per antibody; {opts.burn_in} burn-in + {opts.epochs} epochs = {E} sweeps over the "
        "CDR-H3 positions (random order). The paper used 7 burn-in + at least 26 epochs: these runs are much "
        "shorter (CPU budget), so they show early-chain behaviour, not stationary statistics.",
        "- Every chain starts from the warm start (CDR-H3 masked, filled with the arg-max in one pass; Alg. 1 "
        "line 3), the same for all chains of an antibody. Energies `E_local` (= -PLL) and `E_raw` are summed over "
        "the CDR-H3 positions only (lower is better).",
        "- Entries: mean ± standard error over chains (n in the `chains` row/column). Chains of one antibody share "
        "the start and the antibody, so they are not independent: the SE understates between-antibody spread. "
        "Deterministic methods (warm start, mask-predict) repeat one value per chain.",
        "- `post`: average over the post-burn-in epochs (the paper's 'across interleaved epochs'); acceptance and "
        "novel-transition rates (accepted proposals that change the state) are per proposal over the post-burn-in "
        "epochs. `final`: the last epoch. Identity: share of CDR-H3 residues equal to the native; BLEU-4: corpus "
        "BLEU (x100, no smoothing) of the designed CDR-H3s against the native ones; stutter: share of adjacent "
        "equal residues within CDR-H3.",
        f"- Block samplers (Table 3): block size decreasing linearly from 4 to 1 over the {E} sweeps "
        "(App. D's schedule; the paper gives no start value). Annealing (Table 4): target temperature "
        "`max(0.05, 1 - rate * epoch)` from epoch 0. Table 5 MH rows: proposal temperature 0.8 (App. F) and "
        f"anneal rate {T5_ANNEAL} (the best-BLEU rate of Table 4; the paper does not state it); the paper's trick of "
        "forcing acceptance 1 for the first two epochs is not used.",
        "- Unconditional generation: one all-mask sequence (no context), filled greedily, then sampled.",
        "",
    ]


def _commands_section(runs: list[dict]) -> list[str]:
    """``## Commands that produced these results``: every finished run, then the unfinished ones."""
    parts = ["## Commands that produced these results", ""]
    if runs:
        for r in runs:
            if r.get("event") == "finish":
                written = ", ".join(f"{k} ({v})" for k, v in r.get("written", {}).items()) or "nothing new"
                note = f" — {r['note']}" if r.get("note") else ""
                parts.append(
                    f"- `{r['command']}` (started {r['started']}, wall {r['wall_s']:.0f} s; records "
                    f"written: {written}){note}"
                )
        unfinished = [
            r
            for r in runs
            if r.get("event") == "start"
            and not any(f.get("event") == "finish" and f["started"] == r["started"] for f in runs)
        ]
        for r in unfinished:
            parts.append(
                f"- `{r['command']}` (started {r['started']}; did not finish: killed or still running; "
                "its completed configurations are in the tables)"
            )
    else:
        parts.append("- (no runs.jsonl)")
    parts.append("")
    return parts


def _table_sections(res: RecordsByConfig, b: int, E: int, antibodies: list[dict] | None) -> list[str]:
    """Tables 1-5 and the unconditional table, each skipped when it shows no column beyond earlier ones."""
    parts: list[str] = []
    sections = [
        ("Table 1 shape: proposal temperature", "1", lambda: table1(res, b)),
        ("Table 2 shape: nucleus (top-p) of the proposal", "2", lambda: table2(res, b)),
        (
            "Table 3 shape: block MH vs block degenerate Gibbs (single-site columns for comparison)",
            "3",
            lambda: table3(res, b),
        ),
        ("Table 4 shape: target-temperature annealing", "4", lambda: table4(res, E)),
        ("Table 5 shape: warm start vs degenerate Gibbs vs mask-predict vs MH", "5", lambda: table5(res)),
        ("Ancestral sampling vs MH vs degenerate Gibbs", "6", lambda: table6(res, b) + "\n\n" + ANCESTRAL_NOTE),
        ("Unconditional generation from all-mask initialisation: stutter", "u", lambda: table_uncond(res, antibodies)),
    ]
    shown: set[str] = set()
    for title, key, fn in sections:
        present = {c for c in TABLES[key] if res.has(c)}
        if not present - shown:  # nothing beyond the columns an earlier table already shows
            continue
        shown |= present
        parts += [f"## {title}", "", fn(), ""]
        missing = [c for c in TABLES[key] if not res.has(c)]
        if missing:
            parts += [f"Not run: {', '.join(missing)}.", ""]
    return parts


def _tail_sections(res: RecordsByConfig, figs: dict, antibodies: list[dict] | None, notes: Path) -> list[str]:
    """Figures, cost per configuration, antibodies and the observations of ``notes.md``."""
    parts: list[str] = []
    fig_lines = [(k, p) for k, p in figs.items() if p is not None]
    if fig_lines:
        parts += ["## Figures", ""]
        for k, p in fig_lines:
            parts.append(f"![{k}]({p.name})")
            parts.append("")
    timing = [
        (c, mean_se([r["seconds_per_chain"] for r in rs])[0] * len(rs), len(rs))
        for c, rs in sorted(res.by_config.items())
    ]
    parts += [
        "## Cost per configuration",
        "",
        _table(
            ["configuration", "chains", "wall s (whole batched call)", "model rows per chain"],
            [
                [c, str(n), f"{s:.0f}", f"{mean_se([r['forward_rows_per_chain'] for r in res.by_config[c]])[0]:.0f}"]
                for c, s, n in timing
            ],
        ),
        "",
        "Wall seconds are those of the invocation that finished the configuration (for one resumed after a "
        "kill, only the resumed part), on a shared 2-core CPU with one torch thread; model rows count every "
        "sequence the sampler forwarded (initial energies included, the shared warm-start pass not).",
        "",
    ]
    if antibodies:
        parts += [
            "## Antibodies",
            "",
            _table(
                ["name", "CDR-H3 (native)", "length", "warm start"],
                [[a["name"], f"`{a['cdr']}`", str(len(a["cdr"])), f"`{a.get('warm', '')}`"] for a in antibodies],
            ),
            "",
        ]
    if notes.exists():
        parts += ["## Observations", "", notes.read_text().strip(), ""]
    return parts


def write_report(out: str | Path, opts: RunOptions, model: str = "") -> Path:
    """Write ``report.md`` and the figures into ``out`` from its ``results.jsonl``."""
    out = Path(out)
    res = RecordsByConfig(read_results(out / RESULTS_FILE))
    ab_path = out / ANTIBODIES_FILE
    antibodies = json.loads(ab_path.read_text()) if ab_path.exists() else None
    first = next((r for rs in res.by_config.values() for r in rs if not r["settings"]["unconditional"]), None)
    if first is not None:  # the folder's own settings win over the command line's (e.g. with --report-only)
        opts = dataclasses.replace(opts, epochs=first["epochs"], burn_in=first["burn_in"], chains=first["chains"])
    b, E = opts.burn_in, opts.total_epochs
    figs = {
        "fig1": figure1(res, b, out / "fig1_samplers.png"),
        "fig2": figure2(res, b, out / "fig2_annealing.png"),
        "fig4": figure4(res, b, out / "fig4_block.png"),
    }
    any_rec = next((rs[0] for rs in res.by_config.values() if rs), None)
    model = (any_rec or {}).get("model", model)
    parts = [f"# CDR-H3 redesign with MLM samplers: {model}", ""]
    parts += _setup_section(model, opts, antibodies)
    parts += _commands_section(_runs(out))
    parts += _table_sections(res, b, E, antibodies)
    parts += _tail_sections(res, figs, antibodies, out / NOTES_FILE)
    path = out / REPORT_FILE
    path.write_text("\n".join(parts) + "\n")
    return path
