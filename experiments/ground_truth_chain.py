"""The chain-rule likelihood against the truth on the synthetic languages (issue 20, part 4, small scale).

For Potts chains (``GroundTruthConfig``'s language: V symbols, length T, every sequence enumerated)
and a BERT MLM trained on exact samples at each coupling, measured at several training steps:
TV and KL(truth || q) of ``p_l2r``, ``p_r2l``, the mixture over all ``T!`` orders, ``exp(-E_local)/Z``
(MH's target), degenerate Gibbs's stationary law and parallel decoding with ``k`` tokens per step; the
per-order TVs and the spread between orders (``ground_truth_chain_eval``). Training seed ``i`` trains on
language ``i`` (``language_seed = i``), so the spread over seeds covers languages as well as trainings.
Records go to ``results.jsonl`` as each unit finishes; a rerun (any subset of seeds) skips finished units
and resumes unfinished trainings (models in ``--runs``, not in the repository); ``README.md`` is
rewritten from the records, with ``fig_chain.png`` when ``--figure-with`` names the other families'
folders (``--report-only``: no training).

    python -m experiments.ground_truth_chain --out docs/results/ground_truth/chain \\
        --runs runs/ground_truth_chain --couplings 0.5,1,2,3 --curve-steps 250,1000,3000 --seeds 0,1,2 --threads 1
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from mlmprob.errors import MLMProbError
from mlmprob.runtime.log import RunMeta, read_log
from mlmprob.training.data import SYMBOL_OFFSET, wrap_symbols

from .ground_truth import _train
from .ground_truth_chain_eval import eval_chain
from .ground_truth_chain_plots import family_label, mean_se, plot_chain
from .ground_truth_common import GroundTruthConfig
from .ground_truth_eval import language, symbol_mlm
from .runner import Experiment, Run, command_lines, run_units
from .runner import run_cli as runner_main

DISTS = ("l2r", "r2l", "mixture", "pll_target", "gibbs")
FIGURE = "fig_chain.png"


class GroundTruthChain(Experiment):
    """Units: (seed, coupling, curve step), one record each; the report rewritten after each unit."""

    prog = "experiments.ground_truth_chain"
    out_help = "result folder (results.jsonl, config.json, README.md)"
    report_only_help = "rewrite README.md (and the figure) only"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--runs", help="folder for the trained models (not for the repository); required unless --report-only"
        )
        p.add_argument(
            "--couplings", type=_tuple(float), default=(1.0, 3.0), help="comma-separated coupling strengths J"
        )
        p.add_argument(
            "--curve-steps",
            type=_tuple(int),
            default=(250, 1000),
            help="comma-separated training checkpoints evaluated",
        )
        p.add_argument(
            "--tokens-per-step",
            type=_tuple(int),
            default=(2, 3),
            help="comma-separated k of the parallel decoding compared with the exact mixture",
        )
        p.add_argument("--seeds", type=_tuple(int), default=(0,), help="training seeds (one model each)")
        p.add_argument(
            "--masking",
            choices=("dynamic", "uniform"),
            default="dynamic",
            help="dynamic: the fixed masking rate; uniform: a uniform number of masks per sequence",
        )
        p.add_argument(
            "--figure-with",
            type=_tuple(str),
            default=(),
            help="with --report-only: comma-separated result folders of the other training families to "
            "draw beside this one in fig_chain.png",
        )

    def check(self, args, parser) -> None:
        if not args.report_only and not args.runs:
            parser.error("--runs is required unless --report-only")

    def setup(self, run: Run) -> None:
        a = run.args
        if "cfg" not in run.state:
            run.state["cfg"] = GroundTruthConfig(
                couplings=a.couplings, curve_steps=a.curve_steps, steps=max(a.curve_steps)
            )
        run.state.setdefault("log", print)
        run.out.mkdir(parents=True, exist_ok=True)

    def config(self, run: Run) -> dict:
        a = run.args
        return {
            **run.state["cfg"].to_dict(),
            "language_seed": "the training seed",
            "tokens_per_step": list(a.tokens_per_step),
            **({} if a.masking == "dynamic" else {"masking": a.masking}),
        }

    def meta(self, run: Run) -> RunMeta:
        return RunMeta(run.out / "config.json", key=None, indent=1)

    def key(self, record: dict) -> str:
        return record["unit"]

    def units(self, run: Run):
        cfg, masking = run.state["cfg"], run.args.masking
        family = "chain" if masking == "dynamic" else f"chain-{masking}"
        return [(family, seed, J, s) for seed in run.args.seeds for J in cfg.couplings for s in cfg.curve_steps]

    def unit_key(self, unit) -> str:
        family, seed, J, s = unit
        return f"{family}/seed{seed}/J{J:g}/step{s}"

    def run_unit(self, run: Run, unit):
        family, seed, J, s = unit
        a = run.args
        rec = _unit(
            dataclasses.replace(run.state["cfg"], seed=seed, language_seed=seed),
            J,
            s,
            Path(a.runs) / f"{family}-J{J:g}-seed{seed}-lang{seed}",
            a.tokens_per_step,
            a.masking,
        )
        yield {"unit": self.unit_key(unit), "seed": seed, "language_seed": seed, **rec}
        run.state["log"](f"{self.unit_key(unit)}: " + ", ".join(f"{k} TV {rec[k]['tv']:.3f}" for k in DISTS))
        write_report(run.out)

    def report_only_entry(self, run: Run) -> dict | None:
        if not (run.out / "results.jsonl").is_file():
            raise MLMProbError(f"{run.out} has no results.jsonl to report")
        rec = {"command": run.command, "report_only": True, "figure_with": list(run.args.figure_with)}
        done = list(read_log(run.out / "runs.jsonl")) if (run.out / "runs.jsonl").is_file() else []
        return None if done and done[-1] == rec else rec  # the same report again: one line

    def report(self, run: Run) -> None:
        write_report(run.out)


def run(
    cfg: GroundTruthConfig,
    out: Path,
    runs: Path,
    tokens_per_step=(2, 3),
    seeds=(0,),
    masking: str = "dynamic",
    log=print,
) -> Run:
    """Train (or resume) one model per seed and coupling, evaluate it at every curve step; one record each
    (``.done``: unit -> record). Seed ``i`` trains on language ``i`` (``cfg.language_seed`` is replaced).
    ``masking``: ``"dynamic"`` (the fixed rate ``cfg.mask_rate``) or ``"uniform"`` (a uniform number of
    masked tokens per sequence, as masked diffusion models train)."""
    args = argparse.Namespace(
        out=str(out), runs=str(runs), tokens_per_step=tuple(tokens_per_step), seeds=tuple(seeds), masking=masking
    )
    r = Run(args, [], Path(out), "", experiment=GroundTruthChain(), state={"cfg": cfg, "log": log})
    r.experiment.setup(r)
    run_units(r.experiment, r, journal=False)
    return r


def _unit(cfg: GroundTruthConfig, J: float, step: int, d: Path, tokens_per_step, masking: str) -> dict:
    from mlmprob.training import read_result
    from mlmprob.training.checkpoint import latest_checkpoint

    lang = language(cfg, J)
    t0 = time.perf_counter()
    _train(cfg, lang, d, steps=max(cfg.curve_steps), mask_rate=cfg.mask_rate, masking=masking, stop_after=step)
    state = read_result(d)
    if state.step != step or not state.history or state.history[-1]["step"] != step:
        raise MLMProbError(f"{d} is at step {state.step}, not {step}: remove it to redo the curve")
    t1 = time.perf_counter()
    mlm = symbol_mlm(latest_checkpoint(d), cfg.vocab_size)
    rec = eval_chain(mlm, lang, wrap=wrap_symbols, offset=SYMBOL_OFFSET, tokens_per_step=tokens_per_step, seed=cfg.seed)
    return {
        "coupling": J,
        "step": step,
        "unary_kl": state.history[-1]["kl"],
        **rec,
        "train_seconds": t1 - t0,
        "eval_seconds": time.perf_counter() - t1,
    }


COLUMNS = (
    ("unary KL", ("unary_kl",)),
    ("TV l2r", ("l2r", "tv")),
    ("TV r2l", ("r2l", "tv")),
    ("TV mixture", ("mixture", "tv")),
    ("TV exp(-E_local)/Z", ("pll_target", "tv")),
    ("KL l2r", ("l2r", "kl")),
    ("KL mixture", ("mixture", "kl")),
    ("KL exp(-E_local)/Z", ("pll_target", "kl")),
    ("TV Gibbs", ("gibbs", "tv")),
    ("KL Gibbs", ("gibbs", "kl")),
    ("orders TV (mean)", ("orders", "tv_mean")),
    ("spread KL", ("spread", "kl_mean")),
)


def _cell(values: list[float]) -> str:
    """Mean, with the standard error over seeds when there are several."""
    m, se = mean_se(values)
    return f"{m:.3f}" if len(values) < 2 else f"{m:.3f} ± {se:.3f}"


def _header(cfg: dict, recs: list[dict], cmds: list[dict]) -> list[str]:
    seeds = sorted({r["seed"] for r in recs})
    lines = [
        "# The chain-rule likelihood against the truth (small scale)",
        "",
        f"Potts chains, V = {cfg['vocab_size']}, T = {cfg['length']} ({cfg['vocab_size'] ** cfg['length']} "
        f"sequences, all enumerated); one BERT MLM per coupling and training seed ({cfg['layers']} layers, hidden "
        f"{cfg['hidden']}, batch {cfg['batch_size']}, "
        + (
            "a uniform number of masked tokens per sequence (1..T), "
            if cfg.get("masking") == "uniform"
            else f"fixed masking rate {cfg['mask_rate']}, "
        )
        + f"{max(cfg['curve_steps'])} steps, evaluated at the listed steps), seeds {seeds}; seed i trains on "
        "language i (its own random fields and couplings of strength J), so the seeds differ in both language "
        "and training. Exact values: every distribution is a table over all sequences built from the MLM's "
        "conditionals for every mask pattern, checked against `mlmprob.loglik` (`check`: the largest "
        "difference). Cells: mean ± standard error over the seeds.",
        "",
        "Commands (`python -m experiments.ground_truth_chain`, module `experiments.ground_truth_chain`):",
        "",
    ]
    lines += command_lines(cmds, "report and figure only")
    res = max((r["gibbs"]["residual"] for r in recs), default=0.0)
    return lines + [
        "",
        "TV(truth, q) and KL(truth || q) in nats. `Gibbs`: the exact stationary law of degenerate "
        "Gibbs (random-order single-site sweeps, every proposal accepted; power iteration of the exact "
        f"sweep kernel, last L1 change at most {res:.1e}); `orders TV`: mean TV of the single orders; "
        "`spread KL`: mean KL between two random orders; `par kN`: TV of parallel decoding (random "
        "order, N tokens per step) to the exact mixture.",
        "",
    ]


def _get(r: dict, path) -> float:
    for k in path:
        r = r[k]
    return r


PAIRED = (
    ("TV l2r", ("l2r", "tv")),
    ("TV mixture", ("mixture", "tv")),
    ("TV exp(-E_local)/Z", ("pll_target", "tv")),
    ("TV Gibbs", ("gibbs", "tv")),
    ("spread KL", ("spread", "kl_mean")),
    ("par k2", ("parallel_vs_mixture", "k2")),
)


def _paired(out: Path, other: Path) -> list[str]:
    """Table of ``other - out`` at the last step common to both, per coupling, paired by seed (the same
    language and seed in both families): mean ± standard error of the differences."""
    a, b = ({(r["coupling"], r["step"], r["seed"]): r for r in read_log(f / "results.jsonl")} for f in (out, other))
    common = set(a) & set(b)
    if not common:
        return []
    last = max(s for _, s, _ in common)
    lines = [
        "",
        f"Paired by seed (same language and training seed), step {last}: {family_label(other)} minus "
        f"{family_label(out)} (negative: {family_label(other)} is closer to the truth).",
        "",
        "| J | seeds | " + " | ".join(f"Δ {c}" for c, _ in PAIRED) + " |",
        "|" + "---|" * (2 + len(PAIRED)),
    ]
    for J in sorted({J for J, s, _ in common if s == last}):
        keys = sorted(k for k in common if k[0] == J and k[1] == last)
        cells = [_cell([_get(b[k], path) - _get(a[k], path) for k in keys]) for _, path in PAIRED]
        lines.append(f"| {J:g} | {len(keys)} | " + " | ".join(cells) + " |")
    return lines


def write_report(out: Path) -> None:
    """``README.md`` of the result folder, from ``results.jsonl``, ``config.json`` and ``runs.jsonl``; with
    ``fig_chain.png`` when the last ``--report-only`` command named the families to draw."""
    recs = list(read_log(out / "results.jsonl"))
    cfg = json.loads((out / "config.json").read_text())
    cmds = list(read_log(out / "runs.jsonl")) if (out / "runs.jsonl").is_file() else []
    pk = sorted({k for r in recs for k in r["parallel_vs_mixture"]})
    lines = _header(cfg, recs, cmds)
    lines += [
        "| J | step | seeds | "
        + " | ".join(c for c, _ in COLUMNS)
        + " | "
        + " | ".join(f"par {k}" for k in pk)
        + " | check |",
        "|" + "---|" * (4 + len(COLUMNS) + len(pk)),
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in recs:
        groups.setdefault((r["coupling"], r["step"]), []).append(r)
    for (J, step), rs in sorted(groups.items()):
        cells = [_cell([_get(r, path) for r in rs]) for _, path in COLUMNS]
        cells += [_cell([r["parallel_vs_mixture"][k] for r in rs]) for k in pk]
        check = max(r["check_max_abs"] for r in rs)
        lines.append(f"| {J:g} | {step} | {len(rs)} | " + " | ".join(cells) + f" | {check:.1e} |")
    figure = [c["figure_with"] for c in cmds if "figure_with" in c]
    if figure:
        folders = [out] + [Path(f) for f in figure[-1]]
        plot_chain(folders, out / FIGURE)
        lines += [
            "",
            f"![TV to the truth]({FIGURE})",
            "",
            f"`{FIGURE}`: (a) TV to the truth at the last step vs coupling, (b) along training "
            f"({family_label(out)}), (c) parallel decoding's TV to the exact mixture vs tokens per step; line "
            "styles: "
            + ", ".join(f"{s} {family_label(f)}" for s, f in zip(("solid", "dashed", "dotted"), folders))
            + "; error bars: standard errors over the seeds.",
        ]
        for other in folders[1:]:
            lines += _paired(out, other)
    lines += [
        "",
        "The two training families (fixed masking rate; a uniform number of masked tokens per sequence, "
        "`--masking uniform`) are in `docs/results/ground_truth/chain` and `.../chain_uniform`; the figure of "
        "both is `docs/results/ground_truth/chain/fig_chain.png`; what they say is in "
        "`docs/results/ground_truth/chain/notes.md`.",
        "",
    ]
    (out / "README.md").write_text("\n".join(lines))


def _tuple(kind):
    return lambda text: tuple(kind(s) for s in text.split(","))


def main(argv=None) -> int:
    return runner_main(GroundTruthChain(), argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
