"""README and figure of ``decoders_truth`` (every decoder's exact law against the truth), from its records."""

from __future__ import annotations

import json
from pathlib import Path

from mlmprob.runtime.log import read_log

from .ground_truth_chain_plots import mean_se
from .runner import command_lines

FIGURE = "fig_decoders.png"
COLORS = {
    "ancestral": "black",
    "speculative": "tab:green",
    "parallel": "tab:red",
    "confidence": "tab:blue",
    "margin": "tab:purple",
    "entropy": "tab:cyan",
    "semi-AR": "tab:orange",
    "argmax": "tab:brown",
    "ReMDM": "tab:olive",
    "adaptive": "tab:pink",
    "reference": "tab:gray",
}


def _cell(values: list, digits: int = 3) -> str:
    """Mean ± standard error over seeds; ``∞`` when a value is infinite (None in the records)."""
    if any(v is None for v in values):
        return "∞"
    m, se = mean_se(values)
    m = 0.0 if abs(m) < 0.5 * 10**-digits else m  # no "-0.000" from rounding errors of exact zeros
    return f"{m:.{digits}f}" if len(values) < 2 else f"{m:.{digits}f} ± {se:.{digits}f}"


def _groups(recs: list[dict]) -> dict[tuple[float, str], list[dict]]:
    out: dict[tuple[float, str], list[dict]] = {}
    for r in recs:
        if "decoder" in r:
            out.setdefault((r["coupling"], r["decoder"]), []).append(r)
    return out


def _order(names, decoders) -> list[str]:
    known = [n for n in decoders if n in names]
    return known + sorted(n for n in names if n not in decoders)


def _header(cfg: dict, recs: list[dict], cmds: list[dict]) -> list[str]:
    models = [r for r in recs if r["unit"].endswith("/model")]
    seeds = sorted({r["seed"] for r in models})
    V, T = cfg["vocab_size"], cfg["length"]
    lines = [
        "# Every decoder against the truth (exact output laws)",
        "",
        f"Potts chains, V = {V}, T = {T} ({V**T} sequences); one BERT MLM per coupling J and training seed "
        f"({cfg['layers']} layers, hidden {cfg['hidden']}, {cfg['steps']} steps, masking rate {cfg['mask_rate']}, "
        f"{cfg['n_train']} exact training samples), seeds {seeds}; seed i trains on language i. For each "
        "decoder, its **exact** output distribution over all sequences is computed from the model's "
        f"conditionals at every one of the {(V + 1) ** T} partial states (`mlmprob.sampling.decoder_exact`: "
        "the distribution over partial states pushed through the decoder's steps). `TV truth`, `KL truth`: "
        "TV(truth, q) and KL(truth || q) to the language; `TV p_mix`, `KL p_mix`: the same to the model's own "
        "`p_mix` (uniform mixture over the T! orders of the chain-rule distribution, the law of "
        '`mlmprob.sample(method="ancestral")` and of `"speculative"`). `calls`: expected sequential model '
        "calls per sample (exact; speculative: Monte Carlo); `rows`: model rows forwarded per sample (one per call "
        "except speculative sampling's verification rows, the adaptive decoder's pair rows and mask-predict's "
        "rows). Cells: mean ± standard error over the seeds "
        "(the spread covers languages and trainings).",
        "",
        "Commands (module `experiments.decoders_truth`):",
        "",
    ]
    lines += command_lines(cmds)
    cm = max((r["check_mix"] for r in models), default=0.0)
    cl = max((r["check_l2r_loglik"] for r in models), default=0.0)
    lines += [
        "",
        f"Checks of the engine on every model: the random-order law equals `p_mix` built from the T! order "
        f"tables to {cm:.1e} (largest probability difference); the left-to-right law equals "
        f'`mlmprob.loglik(order="l2r")` to {cl:.1e} (log-probability, 8 sequences).',
        "",
    ]
    by_j: dict[float, list[float]] = {}
    for r in models:
        by_j.setdefault(r["coupling"], []).append(r["unary_kl"])
    lines += [
        "Training: single-site KL(truth || MLM) at the last step, "
        + "; ".join(f"J = {J:g}: {_cell(v, 4)}" for J, v in sorted(by_j.items()))
        + ".",
        "",
    ]
    return lines


def _table(J: float, groups, decoders) -> list[str]:
    names = _order({n for (j, n) in groups if j == J}, decoders)
    lines = [
        f"## J = {J:g}",
        "",
        "| decoder | calls | rows | TV truth | KL truth | TV p_mix | KL p_mix | seeds | what |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in names:
        rs = groups[(J, n)]
        calls = "— (chain)" if rs[0]["calls"] is None else _cell([r["calls"] for r in rs], 2)
        rows = "—" if rs[0]["calls"] is None else _cell([r.get("forward_rows_per_sample", r["calls"]) for r in rs], 2)
        note = decoders[n].note if n in decoders else ""
        lines.append(
            f"| {n} | {calls} | {rows} | "
            + " | ".join(_cell([r[k] for r in rs]) for k in ("tv_truth", "kl_truth", "tv_model", "kl_model"))
            + f" | {len(rs)} | {note} |"
        )
    return lines + [""]


def _speculative(groups, T: int) -> list[str]:
    keys = sorted(k for k, rs in groups.items() if "rounds" in rs[0])
    if not keys:
        return []
    lines = [
        "## Speculative sampling: cost against the one-position sampler",
        "",
        'Monte Carlo of `mlmprob.sample(method="speculative", order="random")` and of '
        '`method="ancestral"` (the same number of draws, fixed seeds) on each model. `calls`: sequential '
        "model calls per sample (two per round, one for a last round of one position; ± the Monte Carlo standard error of the first seed's run, then ± over seeds); "
        "`positions / round`: T / rounds, the mean acceptance length; `rows`: model rows forwarded per sample; `MC TV stat`: TV of the draws' distribution of the number "
        "of equal adjacent pairs to its exact value under `p_mix` (speculative | ancestral, the latter "
        "the noise floor of as many exact draws).",
        "",
        "| J | decoder | draws | calls | rounds | positions / round | rows | ancestral calls | ancestral rows | "
        "MC TV stat |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for J, n in keys:
        rs = groups[(J, n)]
        lines.append(
            f"| {J:g} | {n} | {rs[0]['mc_draws']} | {_cell([r['calls'] for r in rs], 2)} "
            f"(MC se {rs[0]['calls_se']:.3f}) | {_cell([r['rounds'] for r in rs], 2)} | "
            f"{_cell([T / r['rounds'] for r in rs], 2)} | "
            f"{_cell([r['forward_rows_per_sample'] for r in rs], 2)} | "
            f"{_cell([r['ancestral_calls'] for r in rs], 2)} | "
            f"{_cell([r['ancestral_forward_rows_per_sample'] for r in rs], 2)} | "
            f"{_cell([r['mc_stat_tv'] for r in rs])} \\| {_cell([r['mc_stat_tv_ancestral'] for r in rs])} |"
        )
    return lines + [""]


def plot(groups, decoders, path: Path) -> None:
    """Error vs expected calls per sample (log x), one column per coupling: TV to the truth (top) and
    to ``p_mix`` (bottom); error bars: standard errors over seeds; reference rows as dashed lines."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    Js = sorted({j for j, _ in groups})
    width = 4.2 * len(Js) + 2.2
    fig, axes = plt.subplots(2, len(Js), figsize=(width, 7), squeeze=False, sharex=True)
    markers = "osD^v<>P*X"
    fams = {n: rs[0]["family"] for (_, n), rs in groups.items()}
    names_all = _order(set(fams), decoders)
    mark = {n: markers[[v for v in names_all if fams[v] == fams[n]].index(n) % len(markers)] for n in names_all}
    for c, J in enumerate(Js):
        names = _order({n for (j, n) in groups if j == J}, decoders)
        for n in names:
            rs = groups[(J, n)]
            fam = rs[0]["family"]
            for row, key in enumerate(("tv_truth", "tv_model")):
                ax = axes[row][c]
                m, se = mean_se([r[key] for r in rs])
                if rs[0]["calls"] is None:
                    ax.axhline(m, ls="--", lw=0.8, color="gray")
                    ax.annotate(
                        n.split(" ")[0],
                        (1.0, m),
                        xycoords=("axes fraction", "data"),
                        fontsize=6,
                        ha="right",
                        va="bottom",
                        color="gray",
                    )
                    continue
                x, xe = mean_se([r["calls"] for r in rs])
                ax.errorbar(
                    [x],
                    [m],
                    yerr=[se],
                    xerr=[xe],
                    color=COLORS.get(fam, "k"),
                    marker=mark[n],
                    ms=5,
                    capsize=2,
                    ls="none",
                    label=n if c == 0 and row == 0 else None,
                )
        axes[0][c].set_title(f"J = {J:g}")
        for row, lab in enumerate(("TV to the true language", "TV to the model's p_mix")):
            axes[row][c].set_xscale("log")
            axes[row][c].set_ylabel(lab)
            axes[row][c].grid(alpha=0.3)
        axes[1][c].set_xlabel("expected sequential model calls per sample")
        axes[1][c].set_xticks([1, 2, 3, 4, 6, 12])
        axes[1][c].xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        axes[1][c].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    fig.legend(loc="center right", fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0, 1 - 2.2 / width, 1))
    fig.savefig(path, dpi=130)
    plt.close(fig)


def write_report(out: Path, decoders: dict) -> None:
    """``README.md`` (and ``fig_decoders.png``) of the result folder from its records."""
    recs = list(read_log(out / "results.jsonl"))
    cfg = json.loads((out / "config.json").read_text())
    cmds = list(read_log(out / "runs.jsonl")) if (out / "runs.jsonl").is_file() else []
    groups = _groups(recs)
    lines = _header(cfg, recs, cmds)
    if groups:
        plot(groups, decoders, out / FIGURE)
        lines += [
            f"![error vs calls]({FIGURE})",
            "",
            f"`{FIGURE}`: TV to the truth (top) and to the model's `p_mix` (bottom) against the expected "
            "sequential model calls per sample (log scale), one column per coupling; colours by family "
            "(black ancestral, green speculative, red parallel, blue confidence, purple margin, cyan entropy, "
            "orange semi-AR, olive ReMDM, pink adaptive, brown mask-predict); error bars: standard errors over seeds; dashed lines: the "
            "reference chains (degenerate Gibbs's stationary law, MH's target), which have no finite call count.",
            "",
        ]
    for J in sorted({j for j, _ in groups}):
        lines += _table(J, groups, decoders)
    lines += _speculative(groups, cfg["length"])
    notes = out / "notes.md"
    if notes.is_file():
        lines += [notes.read_text()]
    (out / "README.md").write_text("\n".join(lines))
