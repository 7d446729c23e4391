"""Report of the ground-truth experiment: tables and plots written next to ``results.jsonl``.

python -m experiments.ground_truth_report docs/results/ground_truth
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mlmprob.joints.constructions import METHOD_LABELS
from mlmprob.runtime.log import read_log

from .ground_truth_common import BEAMS, JOINT_METHODS, RESULTS, empirical, tv
from .ground_truth_common import by_stage as _by
from .ground_truth_common import model_of as _model_of
from .ground_truth_common import per_model as _per_model
from .ground_truth_findings import findings
from .ground_truth_plots import plots

MIX_WINDOW = 3  # epochs in the moving average of the statistic's TV
MIX_FACTOR = 2.0  # mixed: the moving average stays within this multiple of the i.i.d. noise floor


def load(out: Path) -> tuple[dict, list[dict], list[dict]]:
    cfg = json.loads((out / "config.json").read_text())
    done = {r["unit"]: r for r in read_log(out / RESULTS)}  # the last record of a unit wins
    return cfg, list(done.values()), list(read_log(out / "runs.jsonl"))


def stat_floor(reference, n: int, reps: int = 200, seed: int = 0) -> float:
    """Mean TV between ``reference`` (a distribution of the statistic) and the histogram of ``n``
    i.i.d. draws from it: the noise floor of a chain ensemble of ``n`` chains."""
    import torch

    p = torch.tensor(reference, dtype=torch.float64).clamp_min(0)
    p = p / p.sum()
    g = torch.Generator().manual_seed(seed)
    draws = torch.multinomial(p, n * reps, replacement=True, generator=g).reshape(reps, n)
    return sum(tv(empirical(d, len(p)), p) for d in draws) / reps


def mixing_epoch(stat_tv: list[dict], key: str, threshold: float, window: int = MIX_WINDOW) -> int | None:
    """First epoch (1-based, the end of a ``window``-epoch moving average) from which the moving
    average of ``stat_tv[e][key]`` stays within ``threshold``; None if it never does.

    >>> mixing_epoch([{"t": 0.3}, {"t": 0.01}, {"t": 0.2}, {"t": 0.02}, {"t": 0.01}], "t", 0.05, window=1)
    4
    >>> mixing_epoch([{"t": 0.3}, {"t": 0.02}, {"t": 0.03}, {"t": 0.01}], "t", 0.05, window=2)
    3
    >>> mixing_epoch([{"t": 0.3}], "t", 0.05) is None
    True
    """
    vals = [e[key] for e in stat_tv]
    first = None
    for i in range(window - 1, len(vals)):
        if sum(vals[i - window + 1 : i + 1]) / window <= threshold:
            first = i + 1 if first is None else first
        else:
            first = None
    return first


def sampler_mixing(r: dict) -> tuple[int | None, int | None, float, float]:
    """(MH mix epoch, Gibbs mix epoch, MH threshold, Gibbs threshold) of a samplers record."""
    n = r["chains"]
    own = r["gibbs"]["stat_tv"]
    late = [e["hist"] for e in own[len(own) // 2 :]]
    own_ref = [sum(col) / len(late) for col in zip(*late)]
    th_mh = MIX_FACTOR * stat_floor(r["stat_target"], n)
    th_g = MIX_FACTOR * stat_floor(own_ref, n)
    return mixing_epoch(r["mh"]["stat_tv"], "target", th_mh), mixing_epoch(own, "own_late", th_g), th_mh, th_g


def _f(v, d=3) -> str:
    return "–" if v is None else f"{v:.{d}f}"


def _unary_table(trains: list[dict]) -> list[str]:
    """Unary conditionals of the coupling models vs the exact ones."""
    if not trains:
        return []
    L: list[str] = []
    L += [
        "## Unary conditionals (trained MLM vs exact)",
        "",
        "Mean KL(true || MLM) of the single-site conditionals on held-out sequences (exact, the trainer's "
        "`kl`), held-out masked-token loss and the loss of the true conditionals at the same masks (floor).",
        "",
        "| coupling J | steps | held-out loss | floor | unary KL |",
        "|---|---|---|---|---|",
    ]
    for r in trains:
        f = r["final"]
        L.append(
            f"| {r['coupling']:g} | {f['step']} | {_f(f['heldout_loss'])} | {_f(f['heldout_floor'])} | "
            f"{_f(f['kl'], 4)} |"
        )
    L.append("")
    return L


def _pairs_table(pairs: list[dict]) -> list[str]:
    """Pair joints of the coupling models vs the true pair joint."""
    if not pairs:
        return []
    L: list[str] = []
    L += [
        "## Pair joints vs the true pair joint",
        "",
        f"{pairs[0]['n']} held-out (sequence, random pair) draws per coupling. KL(true || construction), "
        "nats, and P-PPL of the gold pair (the held-out values, exact samples of the true pair joint); "
        "`true` is the P-PPL of the exact joint itself, `exp H` the exponentiated mean true entropy.",
        "",
        "| J | "
        + " | ".join(f"KL {METHOD_LABELS[m]}" for m in JOINT_METHODS)
        + " | "
        + " | ".join(f"P-PPL {METHOD_LABELS[m]}" for m in JOINT_METHODS)
        + " | P-PPL true | exp H |",
        "|---" * (2 * len(JOINT_METHODS) + 3) + "|",
    ]
    for r in pairs:
        L.append(
            f"| {r['coupling']:g} | "
            + " | ".join(_f(r["kl"][m], 4) for m in JOINT_METHODS)
            + " | "
            + " | ".join(_f(r["p_ppl"][m]) for m in JOINT_METHODS)
            + f" | {_f(r['p_ppl']['true'])} | {_f(r['true_entropy_ppl'])} |"
        )
    L.append("")
    return L


def _samplers_table(samplers: list[dict]) -> list[str]:
    """MH and Gibbs samples vs the truth and vs exp(-E_local)/Z, with mixing epochs."""
    if not samplers:
        return []
    L: list[str] = []
    s0 = samplers[0]
    L += [
        "## Samplers vs the truth and vs exp(-E_local)/Z",
        "",
        f"{s0['chains']} chains from uniform random starts, {s0['epochs']} epochs (sweeps); the second half "
        "is pooled for the TVs. `floor`: TV of as many exact i.i.d. draws (MCMC samples are correlated, so "
        "their noise is larger). `mix`: first epoch from which the chains' distribution of the number of "
        f"equal adjacent pairs, averaged over {MIX_WINDOW} epochs, stays within {MIX_FACTOR:g}x the noise floor "
        f"of {s0['chains']} i.i.d. draws (threshold in brackets) of the reference: MH, the exact target "
        "exp(-E)/Z; Gibbs, its own distribution over the second half (its stationary law is unknown, so this "
        "only says when the chains stop drifting); `–`: never.",
        "",
        "| J | TV(target, truth) | MH TV truth | MH TV target | Gibbs TV truth | Gibbs TV target | floor truth | "
        "floor target | MH accept | MH mix | Gibbs mix |",
        "|---" * 11 + "|",
    ]
    for r in samplers:
        mh_mix, g_mix, th_mh, th_g = sampler_mixing(r)
        L.append(
            f"| {r['coupling']:g} | {_f(r['tv_target_truth'])} | {_f(r['mh']['tv_truth'])} | "
            f"{_f(r['mh']['tv_target'])} | {_f(r['gibbs']['tv_truth'])} | {_f(r['gibbs']['tv_target'])} | "
            f"{_f(r['floor_truth'])} | {_f(r['floor_target'])} | {_f(r['mh']['accept_rate'])} | "
            f"{mh_mix or '–'} ({th_mh:.3f}) | {g_mix or '–'} ({th_g:.3f}) |"
        )
    L.append("")
    return L


def _infill_table(cfg: dict, infills: list[dict]) -> list[str]:
    """Beam-search infilling vs the true mode of p(gap | context)."""
    if not infills:
        return []
    L: list[str] = []
    L += [
        "## Infilling vs the true mode of p(gap | context)",
        "",
        f"{infills[0]['n']} held-out gaps per (J, k), beam {cfg['beam_size']}. `mode`: share of gaps whose top "
        "beam fill is the exact mode; `regret`: mean log p(mode) - log p(top fill) under the truth; "
        "`exact/...`: the same beam searches on the exact conditionals; HCB there pivots on symbol 0, as the "
        "exact model has no mask output, while the trained model's HCB pivots on the mask token (the paper's "
        "default), so the two HCB rows are not the same correction.",
        "",
        "| J | k | method | mode | gold | regret |",
        "|---|---|---|---|---|---|",
    ]
    for r in infills:
        for who in ("mlm", "exact"):
            for method, order in BEAMS:
                name = f"{who}/{method}-{order}"
                m = r["methods"][name]
                L.append(
                    f"| {r['coupling']:g} | {r['k']} | {name} | {_f(m['mode'])} | {_f(m['gold'])} | "
                    f"{_f(m['regret'], 4)} |"
                )
    L.append("")
    return L


def _curve_table(cfg: dict, recs: list[dict], curve_p: list[dict], curve_i: list[dict]) -> list[str]:
    """Every family on the checkpoints of the step curve."""
    if not curve_p:
        return []
    L: list[str] = []
    J = curve_p[0]["coupling"]
    k_last = cfg["gap_lengths"][-1]
    curve_s = {r["step"]: r for r in _by(recs, "samplers", "curve/")}
    L += [
        f"## Error vs training steps (J = {J:g})",
        "",
        "Every family on the checkpoints of one run"
        + (
            " (same seed and length, so the last row is the coupling table's model)"
            if J in cfg["couplings"] and max(cfg["curve_steps"]) == cfg["steps"]
            else ""
        )
        + f". Infill: mode rate for gaps of k = {k_last}; samplers as above.",
        "",
        "| step | unary KL | "
        + " | ".join(f"pair KL {METHOD_LABELS[m]}" for m in JOINT_METHODS)
        + " | infill mode std l2r | infill mode HCB l2r | TV(target, truth) | MH TV target | Gibbs TV truth |",
        "|---" * (len(JOINT_METHODS) + 7) + "|",
    ]
    last_k = {r["step"]: r for r in curve_i if r["k"] == k_last}
    for r in curve_p:
        i, sm = last_k.get(r["step"]), curve_s.get(r["step"])
        L.append(
            f"| {r['step']} | {_f(r.get('unary_kl'), 4)} | "
            + " | ".join(_f(r["kl"][m], 4) for m in JOINT_METHODS)
            + f" | {_f(i and i['methods']['mlm/standard-l2r']['mode'])} | "
            f"{_f(i and i['methods']['mlm/hcb-l2r']['mode'])} | {_f(sm and sm['tv_target_truth'])} | "
            f"{_f(sm and sm['mh']['tv_target'])} | {_f(sm and sm['gibbs']['tv_truth'])} |"
        )
    L.append("")
    return L


def _masking_table(cfg: dict, recs: list[dict], masking: list[dict]) -> list[str]:
    """Masking rate and static vs dynamic masking, then every family on each masking model."""
    if not masking:
        return []
    L: list[str] = []
    L += [
        f"## Masking rate and static vs dynamic masking (J = {masking[0]['coupling']:g}, "
        f"{masking[0]['n_train']} training sequences)",
        "",
        "Unary KL (exact, single-site, the same measure for every rate) at the end of training, and the best "
        "over the run; held-out loss is at each run's own masking rate (not comparable across rates).",
        "",
        "| mask rate | k | masking | final unary KL | best unary KL | held-out loss |",
        "|---|---|---|---|---|---|",
    ]
    for r in masking:
        best = min(h["kl"] for h in r["history"] if h.get("kl") is not None)
        L.append(
            f"| {r['mask_rate']:g} | {r['k']} | {r['masking']} | {_f(r['final']['kl'], 4)} | {_f(best, 4)} | "
            f"{_f(r['final']['heldout_loss'])} |"
        )
    L.append("")
    k_last = cfg["gap_lengths"][-1]
    mp, ms = _per_model(recs, "pairs", "masking/"), _per_model(recs, "samplers", "masking/")
    mi = _per_model(recs, "infill", "masking/", k_last)
    if mp:
        L += [
            f"Every family on the final model of each masking run (same measures as above; infill k = {k_last}):",
            "",
            "| mask rate | masking | pair KL MLM | pair KL HCB | pair KL AG | TV(target, truth) | MH TV target | "
            "Gibbs TV truth | infill mode std l2r | infill mode HCB l2r |",
            "|---" * 10 + "|",
        ]
        for r in masking:
            u = _model_of(r)
            p, sm, i = mp.get(u), ms.get(u), mi.get(u)
            L.append(
                f"| {r['mask_rate']:g} | {r['masking']} | {_f(p and p['kl']['mlm'], 4)} | "
                f"{_f(p and p['kl']['hcb'], 4)} | {_f(p and p['kl']['ag'], 4)} | "
                f"{_f(sm and sm['tv_target_truth'])} | {_f(sm and sm['mh']['tv_target'])} | "
                f"{_f(sm and sm['gibbs']['tv_truth'])} | "
                f"{_f(i and i['methods']['mlm/standard-l2r']['mode'])} | "
                f"{_f(i and i['methods']['mlm/hcb-l2r']['mode'])} |"
            )
        L.append("")
    return L


def tables(cfg: dict, recs: list[dict]) -> list[str]:
    """The report's Markdown tables, one section per stage that has records."""
    L: list[str] = []
    trains = sorted(_by(recs, "train", "coupling/"), key=lambda r: r["coupling"])
    pairs = sorted(_by(recs, "pairs", "coupling/"), key=lambda r: r["coupling"])
    samplers = sorted(_by(recs, "samplers", "coupling/"), key=lambda r: r["coupling"])
    infills = sorted(_by(recs, "infill", "coupling/"), key=lambda r: (r["coupling"], r["k"]))
    curve_p = sorted(_by(recs, "pairs", "curve/"), key=lambda r: r["step"])
    curve_i = sorted(_by(recs, "infill", "curve/"), key=lambda r: (r["step"], r["k"]))
    masking = sorted(_by(recs, "masking", "masking/"), key=lambda r: (r["mask_rate"], r["masking"]))
    L += _unary_table(trains)
    L += _pairs_table(pairs)
    L += _samplers_table(samplers)
    L += _infill_table(cfg, infills)
    L += _curve_table(cfg, recs, curve_p, curve_i)
    L += _masking_table(cfg, recs, masking)
    return L


def write_report(out) -> Path:
    out = Path(out)
    cfg, recs, runs = load(out)
    figs = plots(cfg, recs, out)
    L = [
        "# Ground truth: every method against the exact distribution",
        "",
        "Generated by `python -m experiments.ground_truth_report` from `results.jsonl` (module "
        "`experiments.ground_truth`). Potts chains with V = "
        f"{cfg['vocab_size']} symbols, length T = {cfg['length']} ({cfg['vocab_size'] ** cfg['length']} sequences, "
        f"all enumerated), field scale {cfg['field_scale']}, couplings {cfg['couplings']}; one BERT MLM per "
        f"coupling ({cfg['layers']} layers, hidden {cfg['hidden']}, {cfg['steps']} steps of batch "
        f"{cfg['batch_size']}, masking rate {cfg['mask_rate']}, {cfg['n_train']} exact training samples).",
        "",
        "Commands:",
        "",
    ]
    L += [f"- `{r['command']}` (wall {r['wall_s']} s, {r.get('threads')} thread(s))" for r in runs] or [
        "- (none recorded)"
    ]
    L.append("")
    L += findings(recs)
    L += tables(cfg, recs)
    L += [f"![{f}]({f})" for f in figs] + [""]
    path = out / "README.md"
    path.write_text("\n".join(L))
    return path


def main(argv=None) -> int:
    """``python -m experiments.ground_truth_report [DIR]``: write the report, print its path."""
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m experiments.ground_truth_report",
        description="Write the ground-truth report (tables and plots) next to DIR/results.jsonl.",
    )
    p.add_argument("dir", nargs="?", default="docs/results/ground_truth", help="the experiment's output folder")
    a = p.parse_args(argv)
    if not (Path(a.dir) / "config.json").is_file():
        p.error(f"{a.dir}: no config.json here (not a ground-truth experiment folder)")
    print(write_report(a.dir))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
