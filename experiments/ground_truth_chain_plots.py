"""The figure of the chain-rule experiment (``ground_truth_chain``): TV to the truth of the chain rule,
``exp(-E_local)/Z`` and degenerate Gibbs, by coupling and along training, and parallel decoding's TV to
the exact mixture by tokens per step; one line style per training family (result folder).
"""

from __future__ import annotations

import json
from pathlib import Path

from mlmprob.runtime.log import read_log

DIST_LABELS = {
    "l2r": "p_l2r",
    "mixture": "mixture over orders",
    "pll_target": "exp(-E_local)/Z",
    "gibbs": "degenerate Gibbs",
}
STYLES = ("-", "--", ":", "-.")


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for one value)."""
    n = len(values)
    m = sum(values) / n
    return m, ((sum((v - m) ** 2 for v in values) / (n - 1) / n) ** 0.5 if n > 1 else 0.0)


def family_label(folder: Path) -> str:
    """``fixed rate R`` or ``uniform masks``, from the folder's ``config.json``."""
    cfg = json.loads((Path(folder) / "config.json").read_text())
    return "uniform masks" if cfg.get("masking") == "uniform" else f"fixed rate {cfg['mask_rate']:g}"


def _groups(folder: Path) -> dict[tuple[float, int], list[dict]]:
    out: dict[tuple[float, int], list[dict]] = {}
    for r in read_log(Path(folder) / "results.jsonl"):
        out.setdefault((r["coupling"], r["step"]), []).append(r)
    return out


def _errorbar(ax, xs, groups, value, **kw):
    stats = [mean_se([value(r) for r in rs]) for rs in groups]
    ax.errorbar(xs, [m for m, _ in stats], yerr=[s for _, s in stats], marker="o", ms=3, capsize=2, **kw)


def plot_chain(folders: list[Path], png: Path) -> Path:
    """Three panels from the result folders (one training family each): (a) TV to the truth vs coupling at
    each family's last step; (b) TV to the truth vs training step (first family); (c) parallel decoding's TV
    to the exact mixture vs tokens per step (1: the mixture itself, 0), last step. Error bars: standard
    errors over the seeds (languages)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(17, 5.6))
    ax[1].set_xscale("log")
    colors = {d: f"C{i}" for i, d in enumerate(DIST_LABELS)}
    for fi, folder in enumerate(folders):
        g, ls, fam = _groups(folder), STYLES[fi % len(STYLES)], family_label(folder)
        last = max(s for _, s in g)
        Js = sorted(J for J, s in g if s == last)
        for d, label in DIST_LABELS.items():
            _errorbar(
                ax[0],
                Js,
                [g[J, last] for J in Js],
                lambda r: r[d]["tv"],
                color=colors[d],
                ls=ls,
                label=f"{label} ({fam})",
            )
        ks = sorted({int(k[1:]) for rs in g.values() for r in rs for k in r["parallel_vs_mixture"]})
        for ji, J in enumerate(Js):
            rs = g[J, last]
            stats = [(0.0, 0.0)] + [mean_se([r["parallel_vs_mixture"][f"k{k}"] for r in rs]) for k in ks]
            ax[2].errorbar(
                [1] + ks,
                [m for m, _ in stats],
                yerr=[s for _, s in stats],
                marker="o",
                ms=3,
                capsize=2,
                color=f"C{ji}",
                ls=ls,
                label=f"J={J:g} ({fam})",
            )
        if fi == 0:
            for ji, J in enumerate(Js):
                steps = sorted(s for J2, s in g if J2 == J)
                for d, dls in (("mixture", "-"), ("pll_target", ":"), ("gibbs", "--")):
                    _errorbar(
                        ax[1],
                        steps,
                        [g[J, s] for s in steps],
                        lambda r: r[d]["tv"],
                        color=f"C{ji}",
                        ls=dls,
                        label=f"J={J:g} {DIST_LABELS[d]}",
                    )
            ax[1].set(
                title=f"along training ({fam}; solid mixture, dotted exp(-E_local)/Z, dashed Gibbs)",
                xticks=steps,
                xticklabels=[str(s) for s in steps],
            )
            ax[1].minorticks_off()
            ax[2].set(xticks=[1] + ks)
    ax[0].set(xlabel="coupling J", ylabel="TV(truth, q)", title="last step: TV to the truth")
    ax[1].set(xlabel="training step (log scale)", ylabel="TV(truth, q)")
    ax[2].set(xlabel="tokens per step k", ylabel="TV(exact mixture, parallel)", title="parallel decoding, last step")
    ax[0].legend(fontsize=6, loc="upper left")
    ax[1].legend(fontsize=5.5, loc="upper right", ncol=2)
    ax[2].legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png
