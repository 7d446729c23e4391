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
import math
from collections import defaultdict
from pathlib import Path

from ..jsonl import read_jsonl
from ..metrics.sequences import corpus_bleu, stutter_rate
from .cdr_h3_common import (ANNEALS, CONFIGS, PTEMPS, RESULTS_FILE, RUNS_FILE, T5_ANNEAL, TABLES, TOPPS, RunOptions,
                            read_results)

REPORT_FILE, NOTES_FILE, ANTIBODIES_FILE = "report.md", "notes.md", "antibodies.json"


def mean_se(values) -> tuple[float, float, int]:
    """Mean, standard error (sample sd / sqrt(n)) and n of the non-missing values.

    >>> m, se, n = mean_se([1.0, 2.0, 3.0]); m, round(se, 6), n
    (2.0, 0.57735, 3)
    """
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    n = len(xs)
    if n == 0:
        return math.nan, math.nan, 0
    m = sum(xs) / n
    if n == 1:
        return m, math.nan, 1
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    return m, math.sqrt(var / n), n


def _fmt(m: float, se: float, digits: int = 2) -> str:
    if math.isnan(m):
        return "—"
    if math.isnan(se):
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {se:.{digits}f}"


class RecordsByConfig:
    """Records grouped by configuration."""

    def __init__(self, records: list[dict]):
        self.by_config: dict[str, list[dict]] = defaultdict(list)
        for r in records:
            self.by_config[r["config"]].append(r)

    def has(self, name: str) -> bool:
        return bool(self.by_config.get(name))

    def cell(self, name: str, where: str, key: str, digits: int = 2) -> str:
        rs = self.by_config.get(name, [])
        return _fmt(*mean_se([r[where][key] for r in rs])[:2], digits)

    def bleu_post(self, name: str, burn_in: int) -> str:
        hyps, refs = [], []
        for r in self.by_config.get(name, []):
            pe = r["per_epoch"].get("cdr")
            cdrs = pe[burn_in:] if pe and "e_local" in r["per_epoch"] else [r["final"]["cdr"]]
            hyps += cdrs
            refs += [r["cdr_native"]] * len(cdrs)
        return f"{100 * corpus_bleu(hyps, refs):.1f}" if hyps and refs[0] is not None else "—"

    def bleu_final(self, name: str) -> str:
        rs = self.by_config.get(name, [])
        if not rs or rs[0]["cdr_native"] is None:
            return "—"
        return f"{100 * corpus_bleu([r['final']['cdr'] for r in rs], [r['cdr_native'] for r in rs]):.1f}"

    def bleu_at(self, name: str, epoch: int) -> float:
        rs = self.by_config.get(name, [])
        hyps = [r["per_epoch"]["cdr"][epoch - 1] if epoch > 0 else r["start"]["cdr"] for r in rs]
        return 100 * corpus_bleu(hyps, [r["cdr_native"] for r in rs])

    def n(self, name: str) -> int:
        return len(self.by_config.get(name, []))

    def units(self, name: str) -> int:
        return len({r["unit"] for r in self.by_config.get(name, [])})

    def trace(self, name: str, key: str) -> tuple[list[float], list[float], list[float]]:
        """Epochs (0 = warm start), mean and standard error over chains of a per-epoch metric."""
        rs = self.by_config.get(name, [])
        if not rs or key not in rs[0]["per_epoch"]:
            return [], [], []
        E = len(rs[0]["per_epoch"][key])
        start = [r["start"].get(key) for r in rs] if key in rs[0]["start"] else None
        xs, ms, ses = [], [], []
        for e in range(0 if start else 1, E + 1):
            vals = start if e == 0 else [r["per_epoch"][key][e - 1] for r in rs]
            m, se, _ = mean_se(vals)
            xs.append(e)
            ms.append(m)
            ses.append(0.0 if math.isnan(se) else se)
        return xs, ms, ses


# -- tables ----------------------------------------------------------------------------------------

def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _sweep_table(res: RecordsByConfig, cols: list[tuple[str, str, str]], burn_in: int) -> str:
    """Rows = metrics, columns = (label, MH config, deg config) pairs: the shape of Tables 1-2."""
    header = [""]
    for label, _, _ in cols:
        header += [f"{label} MH-local", f"{label} deg"]
    metrics = [("E_local ↓ (post)", "e_local"), ("E_raw (post)", "e_raw"), ("novel rate", "novel"),
               ("acceptance", "accept"), ("identity (post)", "identity"), ("stutter (post)", "stutter")]
    rows = []
    for title, key in metrics:
        row = [title]
        for _, mh, deg in cols:
            row += [res.cell(mh, "post_burn_in", key, 3 if key in ("novel", "accept", "identity", "stutter") else 2),
                    res.cell(deg, "post_burn_in", key, 3 if key in ("novel", "accept", "identity", "stutter") else 2)]
        rows.append(row)
    row = ["BLEU-4 (post, corpus)"]
    for _, mh, deg in cols:
        row += [res.bleu_post(mh, burn_in), res.bleu_post(deg, burn_in)]
    rows.append(row)
    row = ["chains"]
    for _, mh, deg in cols:
        row += [str(res.n(mh)), str(res.n(deg))]
    rows.append(row)
    return _table(header, rows)


def table1(res: RecordsByConfig, burn_in: int) -> str:
    return _sweep_table(res, [(f"T={t}", f"t1/mh-local-pt{t}", f"t1/gibbs-pt{t}") for t in PTEMPS], burn_in)


def table2(res: RecordsByConfig, burn_in: int) -> str:
    cols = [("p=1.0", "t1/mh-local-pt1.0", "t1/gibbs-pt1.0")]
    cols += [(f"p={p}", f"t2/mh-local-topp{p}", f"t2/gibbs-topp{p}") for p in TOPPS[1:]]
    return _sweep_table(res, cols, burn_in)


def table3(res: RecordsByConfig, burn_in: int) -> str:
    cols = [("Deg", "t3/block-gibbs"), ("Raw", "t3/block-mh-raw"), ("Norm (local)", "t3/block-mh-local"),
            ("single-site Norm (T1, T=1.0)", "t1/mh-local-pt1.0"), ("single-site deg (T1, T=1.0)", "t1/gibbs-pt1.0")]
    rows = []
    for title, key in [("E_local ↓ (post)", "e_local"), ("E_raw (post)", "e_raw"), ("novel rate", "novel"),
                       ("acceptance", "accept"), ("identity (post)", "identity"), ("stutter (post)", "stutter")]:
        d = 3 if key in ("novel", "accept", "identity", "stutter") else 2
        rows.append([title] + [res.cell(c, "post_burn_in", key, d) for _, c in cols])
    rows.append(["BLEU-4 (post, corpus)"] + [res.bleu_post(c, burn_in) for _, c in cols])
    rows.append(["chains"] + [str(res.n(c)) for _, c in cols])
    return _table([""] + [label for label, _ in cols], rows)


def table4(res: RecordsByConfig, total_epochs: int) -> str:
    header = [""]
    for r in ANNEALS:
        header += [f"{r}: E_local ↓ (final)", f"{r}: accept", f"{r}: identity (final)", f"{r}: BLEU-4 (final)"]
    rows = []
    for label, e in (("Norm (MH-local)", "local"), ("Raw (MH-raw)", "raw")):
        row = [label]
        for r in ANNEALS:
            c = f"t4/anneal{r}-mh-{e}"
            row += [res.cell(c, "final", "e_local"), res.cell(c, "post_burn_in", "accept", 3),
                    res.cell(c, "final", "identity", 3), res.bleu_final(c)]
        rows.append(row)
    temps = ", ".join(f"{r}: {max(0.05, 1 - r * (total_epochs - 1)):.2f}" for r in ANNEALS)
    return _table(header, rows) + f"\n\nTarget temperature at the last epoch (rate: T): {temps}."


def table5(res: RecordsByConfig) -> str:
    rows_cfg = [("Warm-start", "t5/warm-start"), ("Degenerate Gibbs (T=0.8)", "t1/gibbs-pt0.8"),
                (f"Mask-predict (beam=1, It={CONFIGS['t5/mask-predict-it10'].iterations})", "t5/mask-predict-it10"),
                (f"Local Energy (MH, proposal T=0.8, anneal {T5_ANNEAL})", f"t5/mh-local-pt0.8-anneal{T5_ANNEAL}"),
                (f"Raw Score Energy (MH, proposal T=0.8, anneal {T5_ANNEAL})", f"t5/mh-raw-pt0.8-anneal{T5_ANNEAL}")]
    header = ["", "E_local ↓ (final)", "E_raw ↓ (final)", "identity (final)", "BLEU-4 (final, corpus)",
              "stutter (final)", "novel rate", "chains"]
    rows = []
    ref = next((c for _, c in rows_cfg if res.has(c)), None)
    if ref is not None:
        rs = res.by_config[ref]
        rows.append(["Native CDR-H3 (reference)", _fmt(*mean_se([r["native"]["e_local"] for r in rs])[:2]),
                     _fmt(*mean_se([r["native"]["e_raw"] for r in rs])[:2]), "1.000", "100.0",
                     _fmt(*mean_se([r["native"]["stutter"] for r in rs])[:2], 3), "—", str(len(rs))])
    for label, c in rows_cfg:
        rows.append([label, res.cell(c, "final", "e_local"), res.cell(c, "final", "e_raw"),
                     res.cell(c, "final", "identity", 3), res.bleu_final(c), res.cell(c, "final", "stutter", 3),
                     res.cell(c, "post_burn_in", "novel", 3), str(res.n(c))])
    return _table(header, rows)


def table_uncond(res: RecordsByConfig, antibodies: list[dict] | None) -> str:
    cfgs = [("Warm-start (greedy fill of all masks)", "u/warm-start"),
            (f"Mask-predict (It={CONFIGS['u/mask-predict-it10'].iterations})", "u/mask-predict-it10"),
            ("Degenerate Gibbs (T=1.0)", "u/gibbs-pt1.0"), ("MH-local (T=1.0)", "u/mh-local-pt1.0")]
    header = ["", "stutter (final)", "stutter (post)", "E_local ↓ (final)", "E_raw (final)", "acceptance",
              "novel rate", "chains", "chain 0, final sequence"]
    rows = []
    if antibodies:
        m, se, n = mean_se([stutter_rate(a["hc"]) for a in antibodies])
        rows.append([f"Native heavy chains (the {n} antibodies)", _fmt(m, se, 3)] + ["—"] * 7)
    for label, c in cfgs:
        rs = sorted(res.by_config.get(c, []), key=lambda r: r["chain"])
        rows.append([label, res.cell(c, "final", "stutter", 3), res.cell(c, "post_burn_in", "stutter", 3),
                     res.cell(c, "final", "e_local"), res.cell(c, "final", "e_raw"),
                     res.cell(c, "post_burn_in", "accept", 3), res.cell(c, "post_burn_in", "novel", 3), str(len(rs)),
                     f"`{rs[0]['final']['cdr']}`" if rs else "—"])
    return _table(header, rows)


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
    ax.fill_between(xs, [m - s for m, s in zip(ms, ses)], [m + s for m, s in zip(ms, ses)], alpha=0.15,
                    color=ax.lines[-1].get_color(), linewidth=0)
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
    lines = [("t1/mh-local-pt1.0", "MH norm (E_local)"), ("f1/mh-raw-pt1.0", "MH raw (E_raw)"),
             ("t1/gibbs-pt1.0", "deg (Gibbs)")]
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
    for c, label in (("t3/block-mh-raw", "block MH raw"), ("t3/block-mh-local", "block MH norm"),
                     ("t3/block-gibbs", "block deg")):
        _line(axes[0], res, c, "accept", label)
        _line(axes[1], res, c, "novel", label)
    axes[0].set_ylabel("acceptance rate")
    axes[1].set_ylabel("novel-transition rate")
    rs = res.by_config.get("t3/block-mh-local") or res.by_config.get("t3/block-gibbs")
    sizes = rs[0]["per_epoch"]["block_size"] if rs else []
    return _finish(fig, axes, burn_in, path, f"Figure 4 shape: block samplers, block size per epoch {sizes}")


# -- report ----------------------------------------------------------------------------------------

def _runs(out: Path) -> list[dict]:
    return read_jsonl(out / RUNS_FILE)


def write_report(out: str | Path, opts: RunOptions, model: str = "") -> Path:
    """Write ``report.md`` and the figures into ``out`` from its ``results.jsonl``."""
    out = Path(out)
    res = RecordsByConfig(read_results(out / RESULTS_FILE))
    ab_path = out / ANTIBODIES_FILE
    antibodies = json.loads(ab_path.read_text()) if ab_path.exists() else None
    first = next((r for rs in res.by_config.values() for r in rs if not r["settings"]["unconditional"]), None)
    if first is not None:   # the folder's own settings win over the command line's (e.g. with --report-only)
        opts = dataclasses.replace(opts, epochs=first["epochs"], burn_in=first["burn_in"], chains=first["chains"])
    b, E = opts.burn_in, opts.total_epochs
    figs = {"fig1": figure1(res, b, out / "fig1_samplers.png"), "fig2": figure2(res, b, out / "fig2_annealing.png"),
            "fig4": figure4(res, b, out / "fig4_block.png")}
    any_rec = next((rs[0] for rs in res.by_config.values() if rs), None)
    model = (any_rec or {}).get("model", model)
    parts = [f"# CDR-H3 redesign with MLM samplers: {model}", ""]
    parts += [
        "Generated by `python -m mlmprob.experiments.cdr_h3` (module `mlmprob.experiments.cdr_h3`, report "
        "`mlmprob.experiments.cdr_h3_report`) from `results.jsonl` in this folder. Shapes follow Goyal et al. "
        "(2022), Tables 1-5 and Figures 1, 2, 4, with CDR-H3 redesign in place of translation.", "",
        "## Setup", "",
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
    runs = _runs(out)
    parts += ["## Commands that produced these results", ""]
    if runs:
        for r in runs:
            if r.get("event") == "finish":
                written = ", ".join(f"{k} ({v})" for k, v in r.get("written", {}).items()) or "nothing new"
                note = f" — {r['note']}" if r.get("note") else ""
                parts.append(f"- `{r['command']}` (started {r['started']}, wall {r['wall_s']:.0f} s; records "
                             f"written: {written}){note}")
        unfinished = [r for r in runs if r.get("event") == "start"
                      and not any(f.get("event") == "finish" and f["started"] == r["started"] for f in runs)]
        for r in unfinished:
            parts.append(f"- `{r['command']}` (started {r['started']}; did not finish: killed or still running; "
                         "its completed configurations are in the tables)")
    else:
        parts.append("- (no runs.jsonl)")
    parts.append("")
    sections = [
        ("Table 1 shape: proposal temperature", "1", lambda: table1(res, b)),
        ("Table 2 shape: nucleus (top-p) of the proposal", "2", lambda: table2(res, b)),
        ("Table 3 shape: block MH vs block degenerate Gibbs (single-site columns for comparison)", "3",
         lambda: table3(res, b)),
        ("Table 4 shape: target-temperature annealing", "4", lambda: table4(res, E)),
        ("Table 5 shape: warm start vs degenerate Gibbs vs mask-predict vs MH", "5", lambda: table5(res)),
        ("Unconditional generation from all-mask initialisation: stutter", "u", lambda: table_uncond(res, antibodies)),
    ]
    shown: set[str] = set()
    for title, key, fn in sections:
        present = {c for c in TABLES[key] if res.has(c)}
        if not present - shown:     # nothing beyond the columns an earlier table already shows
            continue
        shown |= present
        parts += [f"## {title}", "", fn(), ""]
        missing = [c for c in TABLES[key] if not res.has(c)]
        if missing:
            parts += [f"Not run: {', '.join(missing)}.", ""]
    fig_lines = [(k, p) for k, p in figs.items() if p is not None]
    if fig_lines:
        parts += ["## Figures", ""]
        for k, p in fig_lines:
            parts.append(f"![{k}]({p.name})")
            parts.append("")
    timing = [(c, mean_se([r["seconds_per_chain"] for r in rs])[0] * len(rs), len(rs))
              for c, rs in sorted(res.by_config.items())]
    parts += ["## Cost per configuration", "",
              _table(["configuration", "chains", "wall s (whole batched call)", "model rows per chain"],
                     [[c, str(n), f"{s:.0f}",
                       f"{mean_se([r['forward_rows_per_chain'] for r in res.by_config[c]])[0]:.0f}"]
                      for c, s, n in timing]),
              "", "Wall seconds are those of the invocation that finished the configuration (for one resumed after a "
              "kill, only the resumed part), on a shared 2-core CPU with one torch thread; model rows count every "
              "sequence the sampler forwarded (initial energies included, the shared warm-start pass not).", ""]
    if antibodies:
        parts += ["## Antibodies", "",
                  _table(["name", "CDR-H3 (native)", "length", "warm start"],
                         [[a["name"], f"`{a['cdr']}`", str(len(a["cdr"])), f"`{a.get('warm', '')}`"]
                          for a in antibodies]), ""]
    notes = out / NOTES_FILE
    if notes.exists():
        parts += ["## Observations", "", notes.read_text().strip(), ""]
    path = out / REPORT_FILE
    path.write_text("\n".join(parts) + "\n")
    return path
