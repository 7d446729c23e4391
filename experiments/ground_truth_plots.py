"""Figures of the ground-truth report (``ground_truth_report``), one function per PNG, from the records
of ``results.jsonl``: unary KL during training, pair-joint KL, sampler TVs, masking rates, infilling.
"""

from __future__ import annotations

from pathlib import Path

from mlmprob.joints.constructions import METHOD_LABELS

from .ground_truth_common import BEAMS, JOINT_METHODS, by_stage, model_of, per_model


def _save(plt, fig, out: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def _fig_training(plt, cfg: dict, recs: list[dict], out: Path) -> str | None:
    """Unary KL vs training step, by coupling and by masking rate."""
    trains = sorted(by_stage(recs, "train", "coupling/"), key=lambda r: r["coupling"])
    masking = sorted(by_stage(recs, "masking", "masking/"), key=lambda r: (r["mask_rate"], r["masking"]))
    if not (trains or masking):
        return None
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for r in trains:
        h = [x for x in r["history"] if x.get("kl") is not None]
        ax[0].plot([x["step"] for x in h], [x["kl"] for x in h], label=f"J={r['coupling']:g}")
    ax[0].set(xlabel="training step", ylabel="unary KL(true || MLM)", yscale="log", title="by coupling")
    ax[0].legend()
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    rates = sorted({r["mask_rate"] for r in masking})
    for r in masking:
        h = [x for x in r["history"] if x.get("kl") is not None]
        ax[1].plot(
            [x["step"] for x in h],
            [x["kl"] for x in h],
            color=colors[rates.index(r["mask_rate"]) % 10],
            ls="-" if r["masking"] == "dynamic" else "--",
            label=f"rate {r['mask_rate']:g} {r['masking']}",
        )
    ax[1].set(
        xlabel="training step",
        ylabel="unary KL(true || MLM)",
        yscale="log",
        title="by masking rate (solid dynamic, dashed static)",
    )
    if masking:
        ax[1].legend(fontsize=7)
    return _save(plt, fig, out, "fig_training.png")


def _fig_pairs(plt, cfg: dict, recs: list[dict], out: Path) -> str | None:
    """Pair-joint KL to the truth vs coupling and vs training step."""
    pairs = sorted(by_stage(recs, "pairs", "coupling/"), key=lambda r: r["coupling"])
    curve_p = sorted(by_stage(recs, "pairs", "curve/"), key=lambda r: r["step"])
    if not pairs:
        return None
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for m in JOINT_METHODS:
        ax[0].plot([r["coupling"] for r in pairs], [r["kl"][m] for r in pairs], "o-", label=METHOD_LABELS[m])
        if curve_p:
            ax[1].plot([r["step"] for r in curve_p], [r["kl"][m] for r in curve_p], "o-", label=METHOD_LABELS[m])
    ax[0].set(xlabel="coupling J", ylabel="KL(true pair joint || construction)", title="pair joints vs coupling")
    ax[1].set(
        xlabel="training step",
        ylabel="KL(true || construction)",
        xscale="log",
        title=f"pair joints vs training (J={curve_p[0]['coupling']:g})" if curve_p else "",
    )
    ax[0].legend()
    return _save(plt, fig, out, "fig_pairs.png")


def _fig_samplers(plt, cfg: dict, recs: list[dict], out: Path) -> str | None:
    """TV of the equal-neighbour count per epoch, MH and Gibbs, one panel per coupling."""
    samplers = sorted(by_stage(recs, "samplers", "coupling/"), key=lambda r: r["coupling"])
    if not samplers:
        return None
    fig, ax = plt.subplots(1, len(samplers), figsize=(3.6 * len(samplers), 3.4), squeeze=False)
    for a, r in zip(ax[0], samplers):
        for method, ls in (("mh", "-"), ("gibbs", "--")):
            e = list(range(1, len(r[method]["stat_tv"]) + 1))
            a.plot(e, [x["truth"] for x in r[method]["stat_tv"]], ls=ls, color="C0", label=f"{method} vs truth")
            a.plot(e, [x["target"] for x in r[method]["stat_tv"]], ls=ls, color="C1", label=f"{method} vs exp(-E)/Z")
        a.set(title=f"J={r['coupling']:g}", xlabel="epoch", yscale="log")
    ax[0][0].set_ylabel("TV of the equal-neighbour count")
    ax[0][0].legend(fontsize=7)
    return _save(plt, fig, out, "fig_samplers.png")


def _fig_masking(plt, cfg: dict, recs: list[dict], out: Path) -> str | None:
    """Every family on the final model of each masking run, vs the masking rate."""
    masking = sorted(by_stage(recs, "masking", "masking/"), key=lambda r: (r["mask_rate"], r["masking"]))
    mp, ms = per_model(recs, "pairs", "masking/"), per_model(recs, "samplers", "masking/")
    if not (mp and ms):
        return None
    fig, ax = plt.subplots(1, 3, figsize=(14, 3.8))
    for mode, ls in (("dynamic", "-"), ("static", "--")):
        rows = [r for r in masking if r["masking"] == mode and model_of(r) in mp and model_of(r) in ms]
        x = [r["mask_rate"] for r in rows]
        ax[0].plot(x, [r["final"]["kl"] for r in rows], "o", ls=ls, color="k", label=f"unary ({mode})")
        for m, c in (("mlm", "C0"), ("hcb", "C1"), ("ag", "C2")):
            ax[0].plot(
                x,
                [mp[model_of(r)]["kl"][m] for r in rows],
                "o",
                ls=ls,
                color=c,
                label=f"pair {METHOD_LABELS[m]} ({mode})",
            )
        sm = [ms[model_of(r)] for r in rows]
        ax[1].plot(x, [s_["tv_target_truth"] for s_ in sm], "o", ls=ls, color="C0", label=f"exp(-E)/Z ({mode})")
        ax[1].plot(x, [s_["gibbs"]["tv_truth"] for s_ in sm], "o", ls=ls, color="C1", label=f"Gibbs samples ({mode})")
    ax[0].set(xlabel="masking rate", ylabel="KL to truth", yscale="log", title="conditionals and pair joints")
    ax[1].set(xlabel="masking rate", ylabel="TV to truth", title="samplers' laws")
    ax[0].legend(fontsize=6)
    ax[1].legend(fontsize=7)
    k_last = cfg["gap_lengths"][-1]
    mi = per_model(recs, "infill", "masking/", k_last)
    for mode, ls in (("dynamic", "-"), ("static", "--")):
        rows = [r for r in masking if r["masking"] == mode and model_of(r) in mi]
        for name, c in (("mlm/standard-l2r", "C0"), ("mlm/hcb-l2r", "C1")):
            ax[2].plot(
                [r["mask_rate"] for r in rows],
                [mi[model_of(r)]["methods"][name]["mode"] for r in rows],
                "o",
                ls=ls,
                color=c,
                label=f"{name} ({mode})",
            )
    ax[2].set(xlabel="masking rate", ylabel=f"top fill = true mode (k={k_last})", title="infilling")
    ax[2].legend(fontsize=7)
    return _save(plt, fig, out, "fig_masking.png")


def _fig_infill(plt, cfg: dict, recs: list[dict], out: Path) -> str | None:
    """Share of gaps whose top beam fill is the true mode, vs coupling, one panel per gap length."""
    infills = sorted(by_stage(recs, "infill", "coupling/"), key=lambda r: (r["coupling"], r["k"]))
    if not infills:
        return None
    ks = sorted({r["k"] for r in infills})
    fig, ax = plt.subplots(1, len(ks), figsize=(5 * len(ks), 3.6), squeeze=False)
    for a, k in zip(ax[0], ks):
        rows = [r for r in infills if r["k"] == k]
        for who, ls in (("mlm", "-"), ("exact", ":")):
            for method, order in BEAMS:
                n = f"{who}/{method}-{order}"
                a.plot([r["coupling"] for r in rows], [r["methods"][n]["mode"] for r in rows], "o", ls=ls, label=n)
        a.set(title=f"gap k={k}", xlabel="coupling J", ylabel="top fill = true mode")
    ax[0][0].legend(fontsize=6)
    return _save(plt, fig, out, "fig_infill.png")


def plots(cfg: dict, recs: list[dict], out: Path) -> list[str]:
    """Write the report's PNGs into ``out``; their file names, in report order (figures without records are
    skipped)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = [fig(plt, cfg, recs, out) for fig in (_fig_training, _fig_pairs, _fig_samplers, _fig_masking, _fig_infill)]
    return [name for name in made if name is not None]
