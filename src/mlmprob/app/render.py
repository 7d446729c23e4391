"""What the web app shows of the tabs' results: HTML fragments, table rows and matplotlib figures (no gradio)."""

from __future__ import annotations

import html
import math

from .compute import MutantScores, ScoreResult
from .dynamics import JOINT_NAMES, PairView, SampleSnapshot
from .infilling import InfillResult

DOUBT_SCALE = 5.0  # log q at which the colour is full red (p = 0.7 %)


def _doubt(log_prob: float) -> float:
    """0 for probability 1, rising linearly in ``-log q`` to 1 at ``log q = -DOUBT_SCALE`` and below."""
    return min(max(-log_prob / DOUBT_SCALE, 0.0), 1.0)


def _colour(log_prob: float) -> str:
    """White for probability 1, deepening red as the model doubts the token (log scale)."""
    t = _doubt(log_prob)
    r, g, b = (round(255 + (c - 255) * t) for c in (214, 39, 40))
    return f"rgb({r},{g},{b})"


def tokens_html(result: ScoreResult) -> str:
    """Each sequence's tokens coloured by ``log q(x_t | rest)``; hovering a token shows the value."""
    parts = ['<div class="mlmprob-tokens">']
    for r in result.rows:
        parts.append(
            f'<div style="margin:4px 0"><b>{html.escape(r.id)}</b> <span style="color:#666">PLL {r.pll:.3f}</span><br>'
        )
        sep = "" if all(len(t.strip()) <= 1 for t in r.tokens) else " "
        for t, lp in zip(r.tokens, r.token_log_prob, strict=True):
            tip = f"log q = {lp:.4f} (p = {math.exp(lp):.3f})"
            ink = "#fff" if _doubt(lp) > 0.6 else "#000"
            parts.append(
                f'<span title="{html.escape(tip)}" data-logq="{lp:.6f}" style="background:{_colour(lp)};'
                f'color:{ink};font-family:monospace;padding:1px 1px;border-radius:2px">'
                f"{html.escape(t)}</span>{sep}"
            )
        parts.append("</div>")
    parts.append(
        '<div style="font-size:small;color:#666">colour: log q(x_t | rest), the token masked; '
        f"white: 0 (p = 1), full red: -{DOUBT_SCALE:g} or below; hover a token for its value</div></div>"
    )
    return "".join(parts)


METHOD_NOTES = {
    "wt_marginals": "log q(mt | wt) - log q(wt | wt), nothing masked",
    "masked_marginals": "each site masked in the wild type (ProteinGym)",
    "masked_marginals_all": "all sites masked together",
    "masked_marginals_mt": "each site masked in the mutant",
    "mutant_marginals": "the mutant, nothing masked",
    "pll_delta": "PLL(mutant) - PLL(wild type)",
    "hcb": "Hammersley-Clifford-Besag path from wt to mutant",
    "ag": "Arnold-Gokhale pair joint (double mutants only)",
    "epistasis": "hcb - sum of single-site masked_marginals",
    "chain": "chain rule over the orders of the sites (mixture log-ratio)",
}


def _na(x: float, digits: int) -> float | str:
    """``x`` rounded, NaN written as ``n/a``."""
    return "n/a" if math.isnan(x) else round(x, digits)


def mutant_rows(ms: MutantScores, digits: int = 4) -> list[list]:
    """``method, score, meaning`` rows (NaN written as ``n/a``)."""
    return [[m, _na(v, digits), METHOD_NOTES.get(m, "")] for m, v in ms.scores.items()]


def infill_rows(res: InfillResult, method: str, digits: int = 4) -> list[list]:
    """``rank, fill left to right, score, fill best first, score`` of one ``method``'s two beams."""
    runs = [r for r in res.runs if r.method == method]
    n = max(len(r.fills) for r in runs)
    rows = []
    for k in range(n):
        row: list = [k + 1]
        for run in runs:
            f = run.fills[k] if k < len(run.fills) else None
            row += [f.fill if f else "", round(f.score, digits) if f else None]
        rows.append(row)
    return rows


def infill_headers() -> list[str]:
    return ["rank", "left to right", "score (l2r)", "best first", "score (best)"]


def infill_summary(res: InfillResult) -> str:
    nums = list(res.numbers)
    where = f"residues/words {', '.join(map(str, nums))}" if nums else f"token indices {list(res.token_indices)}"
    if nums and nums == list(range(nums[0], nums[-1] + 1)):
        where = f"residues/words {nums[0]}-{nums[-1]}"
    lines = [f"Gap: {len(res.token_indices)} token(s) at {where}."]
    if res.native is None:
        lines.append("Native fill: not known (the gap was marked in the text).")
    else:
        ranks = ", ".join(f"{r.method} {r.order}: {r.native_rank or 'not in the beam'}" for r in res.runs)
        lines.append(f"Native fill `{res.native}`, rank {ranks}.")
    lines.append(
        "Scores: standard = sum of log q of each token with the rest of the gap masked; "
        "HCB = the same minus the pivot (mask) term, log p(fill)/p(pivot) for a compatible joint."
    )
    return "\n\n".join(lines)


def sample_summary(s: SampleSnapshot) -> str:
    rate = "n/a" if math.isnan(s.accept_rate) else f"{s.accept_rate:.3f}"
    last = s.energy[-1]
    mean = sum(last) / len(last)
    return (
        f"Epoch {s.epoch}/{s.epochs}; acceptance rate {rate}; mean E_{s.energy_kind} {mean:.3f} "
        f"over {len(last)} chain(s); {len(s.free)} free position(s); method {s.method}."
    )


def sample_rows(s: SampleSnapshot, digits: int = 4) -> list[list]:
    return [[c, round(s.energy[-1][c], digits), seq] for c, seq in enumerate(s.sequences)]


def _pyplot():
    """``matplotlib.pyplot`` on the Agg backend (figures drawn off screen)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def trace_figure(s: SampleSnapshot):
    """The target energy of each chain per epoch."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    xs = list(range(len(s.energy)))
    for c in range(len(s.energy[0])):
        ax.plot(xs, [e[c] for e in s.energy], lw=1.2, label=f"chain {c}")
    ax.set(xlabel="epoch", ylabel=f"E_{s.energy_kind}", xlim=(0, max(s.epochs, 1)), title="energy trace")
    if len(s.energy[0]) <= 8:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    plt.close(fig)
    return fig


LOG10_FLOOR = -5.0  # pair heatmaps: log10 p below this is drawn as this


def pair_figure(pv: PairView):
    """Five heatmaps: each joint's log10 probabilities over the shown tokens (rows x_a, columns x_b)."""
    plt = _pyplot()
    n = len(JOINT_NAMES)
    ka, kb = len(pv.labels_a), len(pv.labels_b)
    fig, axes = plt.subplots(1, n, figsize=(2.3 * n + 1.0, 0.18 * ka + 2.0), squeeze=False)
    im = None
    for ax, (m, name) in zip(axes[0], JOINT_NAMES.items(), strict=True):
        logp = pv.joints[m].clamp(min=1e-300).log10().clamp(min=LOG10_FLOOR).numpy()
        im = ax.imshow(logp, cmap="viridis", vmin=LOG10_FLOOR, vmax=0.0, aspect="auto", interpolation="nearest")
        ax.set_title(f"{name}\nA-KL {pv.akl[m]:.3g}  G-KL {_g(pv.gkl[m])}", fontsize=8)
        ax.set_xticks(range(kb), pv.labels_b, fontsize=6, rotation=90)
        ax.set_yticks(range(ka), pv.labels_a if ax is axes[0][0] else [], fontsize=6)
        ax.set_xlabel(f"x at {pv.b}", fontsize=7)
    axes[0][0].set_ylabel(f"x at {pv.a}", fontsize=7)
    assert im is not None  # one panel per joint, JOINT_NAMES is not empty
    fig.colorbar(im, ax=axes[0].tolist(), fraction=0.015, pad=0.01, label="log10 p(x_a, x_b)")
    plt.close(fig)
    return fig


def saturation_figure(smap):
    """The saturation map at a glance (``variants.saturation.heatmap_figure``, page-sized): substitutions
    down, residues across; red = more likely than the wild type, blue = less, dots on the wild-type cells."""
    from ..variants.saturation import heatmap_figure

    return heatmap_figure(smap.sat, "masked_marginals", compact=True)


def _g(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3g}"


def pair_rows(pv: PairView) -> list[list]:
    """``joint, A-KL, G-KL, mass shown`` per method."""
    mass = {m: round(float(pv.joints[m].sum()), 4) for m in JOINT_NAMES}
    return [[name, round(pv.akl[m], 6), _na(pv.gkl[m], 6), mass[m]] for m, name in JOINT_NAMES.items()]


def pair_summary(pv: PairView) -> str:
    return (
        f"Positions {pv.a} (holds `{pv.gold[0]}`) and {pv.b} (holds `{pv.gold[1]}`); {pv.n_candidates} candidate "
        f"tokens (mass outside them in the both-masked copy: {pv.outside_mass:.3g}); showing the top "
        f"{len(pv.labels_a)} x {len(pv.labels_b)} by the MLM's both-masked conditionals. A-KL: mean KL from the "
        "MLM's conditionals to each joint's; G-KL: the same at the sequence's own tokens."
    )


def saturation_styler(smap):
    """The L x 20 table with a red (above the wild type) / blue (below) background per cell."""
    import pandas as pd

    vals = smap.values().numpy()
    df = pd.DataFrame(vals.round(2), columns=list(smap.sat.letters))
    df.insert(0, "residue", smap.row_labels())
    span = float(abs(vals).max()) or 1.0
    return df.style.background_gradient(cmap="RdBu_r", vmin=-span, vmax=span, subset=list(smap.sat.letters)).format(
        precision=2, subset=list(smap.sat.letters)
    )
