"""The report of ``likelihood_real``: per-token perplexities of real MLMs under the chain rule.

Corpus perplexity of a quantity ``ll`` (natural log, per sequence) is ``exp(-sum ll / sum n)`` over
the sequences of a set (``n`` scored tokens each), with a 95% percentile bootstrap interval over
sequences (seed 0, 1,000 resamples). ``mix K`` is the mean over disjoint groups of ``K`` of the
random orders of ``log mean_{sigma in group} p_sigma``: an importance-weighted lower bound of the
log-likelihood of the mixture over all orders that rises with ``K`` (``K = 1`` is the ELBO).
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import torch

from mlmprob.errors import MLMProbError
from mlmprob.runtime.log import RunMeta, read_log

KS = (1, 4, 16, 64)
N_BOOT = 1000


def mixture_bound(per_order: list[float], k: int) -> float:
    """Mean over the disjoint groups of ``k`` consecutive orders of the log of their mean probability.

    >>> round(mixture_bound([0.0, -math.inf, 0.0, -math.inf], 2), 4) == round(math.log(0.5), 4)
    True
    >>> mixture_bound([-1.0, -3.0], 1)
    -2.0
    """
    x = torch.tensor(per_order[: len(per_order) // k * k], dtype=torch.float64).view(-1, k)
    return float((torch.logsumexp(x, 1) - math.log(k)).mean())


def corpus_ppl(
    ll: torch.Tensor, n: torch.Tensor, generator: torch.Generator | None = None
) -> tuple[float, float, float]:
    """``exp(-sum ll / sum n)`` and its 95% bootstrap interval over the sequences."""
    ppl = math.exp(-float(ll.sum() / n.sum()))
    if len(ll) < 2:
        return ppl, math.nan, math.nan
    g = generator or torch.Generator().manual_seed(0)
    idx = torch.randint(len(ll), (N_BOOT, len(ll)), generator=g)
    boot = torch.exp(-ll[idx].sum(1) / n[idx].sum(1))
    lo, hi = torch.quantile(boot, torch.tensor([0.025, 0.975], dtype=boot.dtype)).tolist()
    return ppl, lo, hi


def group_records(records) -> dict[tuple[str, str, int], list[dict]]:
    groups = defaultdict(list)
    for r in records:
        groups[(r["model"], r["set"], r["k_max"])].append(r)
    return dict(sorted(groups.items()))


def summarize(recs: list[dict]) -> dict:
    """The numbers of one (model, set) row of the tables."""
    n = torch.tensor([r["n_tokens"] for r in recs], dtype=torch.float64)
    k_max = min(len(r["per_order"]) for r in recs)
    col = {"seqs": len(recs), "tokens": float(n.mean()), "k_max": k_max}
    for key in ("pll", "l2r", "r2l"):
        col[key] = corpus_ppl(torch.tensor([r[key] for r in recs], dtype=torch.float64), n)
    top = torch.tensor([mixture_bound(r["per_order"][:k_max], k_max) for r in recs], dtype=torch.float64)
    for k in (k for k in KS if k <= k_max):
        ll = torch.tensor([mixture_bound(r["per_order"][:k_max], k) for r in recs], dtype=torch.float64)
        col[f"mix{k}"] = corpus_ppl(ll, n)
        col[f"gap{k}"] = float(((top - ll) / n).mean())
    per_tok = [torch.tensor(r["per_order"][:k_max], dtype=torch.float64) / r["n_tokens"] for r in recs]
    col["spread"] = float(torch.stack([p.std() for p in per_tok]).mean()) if k_max > 1 else math.nan
    col["range"] = float(torch.stack([p.max() - p.min() for p in per_tok]).mean())
    col["outside"] = float(torch.tensor([r["outside_mass"] for r in recs]).mean())
    col["seconds"] = float(sum(r["seconds"] for r in recs))
    return col


def _ci(v: tuple[float, float, float]) -> str:
    ppl, lo, hi = v
    return f"{ppl:.3f}" if math.isnan(lo) else f"{ppl:.3f} [{lo:.3f}, {hi:.3f}]"


def tables(summaries: dict) -> list[str]:
    """The two tables from ``{(model, set, k_max): summarize(records)}``."""
    lines = [
        "| model | set | seqs | tokens/seq | pseudo-ppl exp(-PLL/n) | ppl l2r | ppl r2l | "
        + " | ".join(f"ppl mix K={k}" for k in KS)
        + " | spread (nats/token) | outside mass |",
        "|" + "---|" * (9 + len(KS)),
    ]
    conv = [
        "| model | set | K max | "
        + " | ".join(f"gap K={k}" for k in KS)
        + " | max-min over orders (nats/token) | seconds |",
        "|" + "---|" * (5 + len(KS)),
    ]
    for (model, name, _), c in summaries.items():
        mix = [
            (_ci(c[f"mix{k}"]) if k == c["k_max"] else f"{c[f'mix{k}'][0]:.3f}") if f"mix{k}" in c else "—" for k in KS
        ]
        lines.append(
            f"| {model} | {name} | {c['seqs']} | {c['tokens']:.1f} | {_ci(c['pll'])} | {_ci(c['l2r'])} | "
            f"{_ci(c['r2l'])} | " + " | ".join(mix) + f" | {c['spread']:.3f} | {c['outside']:.2e} |"
        )
        gaps = [f"{c[f'gap{k}']:.4f}" if f"gap{k}" in c else "—" for k in KS]
        conv.append(
            f"| {model} | {name} | {c['k_max']} | " + " | ".join(gaps) + f" | {c['range']:.3f} | {c['seconds']:.0f} |"
        )
    return (
        lines
        + [
            "",
            "How fast the mixture converges in K: `gap K` is the mean over sequences of "
            "(mix K_max - mix K) / n, in nats per token (0 at K = K max; K = 1 is the ELBO's gap).",
            "",
        ]
        + conv
    )


def figure(summaries: dict, out: Path) -> str | None:
    """``fig_orders.png``: per-token perplexity of the mixture bound against K, one panel per model, with
    l2r, r2l and the pseudo-perplexity as marks at the right; ``None`` without records."""
    if not summaries:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    models = sorted({m for m, _, _ in summaries})
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 3.6), squeeze=False)
    for ax, model in zip(axes[0], models):
        for (m, name, _), c in summaries.items():
            if m != model:
                continue
            ks = [k for k in KS if f"mix{k}" in c]
            (line,) = ax.plot(ks, [c[f"mix{k}"][0] for k in ks], "o-", label=f"{name} mixture")
            x = ks[-1] * 1.6
            for key, mark in (("l2r", ">"), ("r2l", "<"), ("pll", "*")):
                ax.plot([x], [c[key][0]], mark, color=line.get_color(), ms=8)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="orders K (mixture bound)",
            ylabel="per-token perplexity",
            title=f"{model} (> l2r, < r2l, * pseudo-ppl)",
        )
        ax.set_xticks(list(KS), [str(k) for k in KS])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fig_orders.png", dpi=110)
    plt.close(fig)
    return "fig_orders.png"


def write_report(out: Path) -> Path:
    out = Path(out)
    if not (out / "results.jsonl").is_file():
        raise MLMProbError(f"{out / 'results.jsonl'} not found: run the experiment first (--plan) or pass its --out")
    records = list(read_log(out / "results.jsonl", skip_header=False))
    meta = RunMeta(out / "config.json").load()
    cmds = meta.get("commands", [])
    text = [
        "# The chain-rule likelihood of real MLMs (issue 20, part 5)",
        "",
        "Generated by `python -m experiments.likelihood_real --report-only` from `results.jsonl`; the "
        "verdict, written by hand from these tables, is in `notes.md`.",
        "",
        "Each sequence is scored with `mlmprob.loglik` (conditionals normalised over the model's proposal alphabet; "
        "`outside mass`: the mean mass the model puts outside it) under the left-to-right order, the right-to-left "
        "order and K max random orders (seeded by the record), and with the exact PLL (normalised over the whole "
        "vocabulary). A perplexity is `exp(-sum ll / sum n)` over the set's sequences with a 95% bootstrap "
        "interval over sequences; `mix K` is the importance-weighted bound of the mixture's log-likelihood from "
        "disjoint groups of K orders (K = 1: the ELBO); `spread`: the standard deviation across random orders "
        "of a sequence's per-token log-likelihood, averaged over sequences. The pseudo-perplexity is not a "
        "perplexity: it is shown for comparison only.",
        "",
        f"Config: `{meta.get('config', {})}`; {len(records)} records.",
        "",
    ]
    summaries = {key: summarize(recs) for key, recs in group_records(records).items()}
    text += tables(summaries)
    fig = figure(summaries, out)
    if fig:
        text += ["", f"![perplexity against the number of orders]({fig})"]
    text += ["", "## Commands", ""] + [
        f"- `{c['command']}` (wall {c['wall_s']} s, {c.get('threads')} thread(s))" for c in cmds
    ]
    path = out / "README.md"
    path.write_text("\n".join(text) + "\n")
    return path
