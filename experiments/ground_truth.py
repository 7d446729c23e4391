"""Every method of the package against the exact answer, on MLMs trained on synthetic languages.

For Potts chains of several coupling strengths (strong coupling = strong dependencies), train a
BERT MLM with ``mlmprob.train`` on exact samples, then measure, against the language's exact
distribution:

- **unary**: mean KL(true || MLM) of the single-site conditionals (the trainer's exact KL);
- **pairs**: every pair-joint construction (MLM, MRF, MRF-logit, HCB, AG) vs the true
  ``p(x_a, x_b | rest)``: KL(true || construction) and P-PPL on the held-out gold pairs, with the
  true joint's own P-PPL as the floor;
- **samplers**: MH (``E_local``) and degenerate Gibbs from random starts: total variation of the
  pooled samples to the truth and to ``exp(-E_local)/Z`` (enumerated), with the TV of as many exact
  i.i.d. draws as the noise floor; per epoch, TV of the chains' distribution of the Potts
  sufficient statistic (number of equal adjacent pairs) to its exact target value (mixing);
- **infill**: standard / HCB beam search (l2r, best-to-worst) vs the true mode of
  ``p(gap | context)``: how often the beam's top fill is the mode, and the regret in exact log
  probability; the same beams on the exact conditionals as reference;
- **training**: the same measurements at several training steps (one coupling), and single-site
  KL curves for several masking rates with static and dynamic masking (Li et al. 2024, Thm. 2).

Records go to ``results.jsonl`` as each unit finishes (a rerun skips finished units and resumes
unfinished trainings); ``python -m experiments.ground_truth_report`` writes the report.

    python -m experiments.ground_truth --out docs/results/ground_truth --runs runs/ground_truth

Code: this module trains the models, runs the stages and is the command line; ``ground_truth_eval``
holds the measurements, ``ground_truth_report`` the report, and both this module and the report take
the configuration and the exact quantities from ``ground_truth_common``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from mlmprob.argtypes import positive_int  # noqa: E402
from mlmprob.errors import MLMProbError
from mlmprob.runtime.log import RunMeta
from mlmprob.training.masking import generator_for, n_selected

# the shared and the evaluation names, importable from here as before the split
from .ground_truth_common import (
    BEAMS,
    JOINT_METHODS,
    RESULTS,
    GroundTruthConfig,
    adjacent_equal,
    all_states,
    empirical,
    kl,
    state_index,
    true_pair_joint,
    tv,
)
from .ground_truth_eval import eval_infill, eval_pairs, eval_samplers, language, symbol_mlm
from .ground_truth_report import write_report
from .runner import Experiment, Run, run_units
from .runner import run_cli as runner_main

__all__ = [
    "BEAMS",
    "JOINT_METHODS",
    "RESULTS",
    "GroundTruth",
    "GroundTruthConfig",
    "adjacent_equal",
    "all_states",
    "empirical",
    "eval_infill",
    "eval_pairs",
    "eval_samplers",
    "kl",
    "language",
    "main",
    "run",
    "state_index",
    "symbol_mlm",
    "true_pair_joint",
    "tv",
]


# -- runner ---------------------------------------------------------------------------------------


def _train(
    cfg: GroundTruthConfig,
    lang,
    out_dir: Path,
    *,
    steps: int,
    mask_rate: float,
    masking: str = "dynamic",
    n_train: int | None = None,
    stop_after: int | None = None,
    progress: bool = False,
):
    from mlmprob.training import SyntheticSource, train

    tc = cfg.train_config(steps=steps, mask_rate=mask_rate, masking=masking)
    src = SyntheticSource(lang, n_train or cfg.n_train, cfg.n_heldout)
    return train(tc, src, out_dir, progress=progress, stop_after=stop_after)


class GroundTruth(Experiment):
    """Units: one per trained model (``coupling/J``, ``curve/step``, ``masking/r-masking``); each yields its
    training record and then its evaluation records (pairs, infill per gap length, samplers), one by one."""

    prog = "experiments.ground_truth"
    formatter_class = argparse.ArgumentDefaultsHelpFormatter
    out_help = "result folder (results.jsonl, config.json, report)"
    report_only = False

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("--runs", required=True, help="folder for the trained models (not for the repository)")
        p.add_argument(
            "--stages",
            default="coupling,curve,masking",
            help="comma-separated stages to run (coupling, curve, masking)",
        )
        p.add_argument("--couplings", type=_floats, help="comma-separated coupling strengths J of the Potts chains")
        p.add_argument("--steps", type=positive_int, help="training steps per model")
        p.add_argument("--n-pairs", type=positive_int, help="position pairs evaluated per model")
        p.add_argument("--n-gaps", type=positive_int, help="infilling gaps evaluated per model")
        p.add_argument("--chains", type=positive_int, help="sampling chains per sampler")
        p.add_argument("--sample-epochs", type=positive_int, help="sampling epochs per chain")
        p.add_argument("--curve-steps", type=_ints, help="comma-separated checkpoints of the training curve")
        p.add_argument("--masking-rates", type=_floats, help="comma-separated masking rates of the masking stage")
        p.add_argument("--masking-steps", type=positive_int, help="training steps of the masking stage")
        p.add_argument("--no-progress", action="store_true", help="no progress bars")
        p.add_argument("--no-report", action="store_true", help="do not rewrite the report after the run")

    def setup(self, run: Run) -> None:
        a = run.args
        if "cfg" not in run.state:
            over = {
                k: getattr(a, k)
                for k in (
                    "couplings",
                    "steps",
                    "n_pairs",
                    "n_gaps",
                    "chains",
                    "sample_epochs",
                    "curve_steps",
                    "masking_rates",
                    "masking_steps",
                )
                if getattr(a, k) is not None
            }
            run.state.update(
                cfg=GroundTruthConfig(**over), stages=tuple(a.stages.split(",")), progress=not a.no_progress, log=print
            )
        run.out.mkdir(parents=True, exist_ok=True)
        Path(a.runs).mkdir(parents=True, exist_ok=True)

    def config(self, run: Run) -> dict:
        return run.state["cfg"].to_dict()  # another configuration is refused

    def meta(self, run: Run) -> RunMeta:
        return RunMeta(run.out / "config.json", key=None, indent=1)

    def key(self, record: dict) -> str:
        return record["unit"]

    def units(self, run: Run):
        cfg, stages = run.state["cfg"], run.state["stages"]
        units = [("coupling", f"coupling/J{J:g}", J) for J in cfg.couplings] if "coupling" in stages else []
        units += [("curve", f"curve/step{s}", s) for s in cfg.curve_steps] if "curve" in stages else []
        if "masking" in stages:
            units += [
                ("masking", f"masking/r{rate:g}-{m}", (rate, m))
                for rate in cfg.masking_rates
                for m in ("dynamic", "static")
            ]
        return units

    def label(self, unit) -> str:
        return unit[1]

    def finished(self, run: Run, unit) -> bool:
        trained = unit[0] == "curve" or f"{unit[1]}/train" in run.done
        return trained and _evaluated(run.state["cfg"], run.done, unit[1], True)

    def run_unit(self, run: Run, unit):
        stage, name, what = unit
        yield from _STAGES[stage](
            run.state["cfg"], run.done, Path(run.args.runs), name, what, run.state["progress"], run.state["log"]
        )

    def report(self, run: Run) -> None:
        write_report(run.out)


def run(
    cfg: GroundTruthConfig,
    out: Path,
    runs: Path,
    *,
    stages=("coupling", "curve", "masking"),
    progress: bool = True,
    log=print,
) -> Run:
    """Run every unit of ``stages`` that ``out/results.jsonl`` lacks; ``.done`` of the result maps each
    record's unit to the record."""
    args = argparse.Namespace(out=str(out), runs=str(runs))
    r = Run(
        args,
        [],
        Path(out),
        "",
        experiment=GroundTruth(),
        state={"cfg": cfg, "stages": tuple(stages), "progress": progress, "log": log},
    )
    r.experiment.setup(r)
    run_units(r.experiment, r, journal=False)
    return r


def _evaluated(cfg: GroundTruthConfig, done: dict, unit: str, with_samplers: bool) -> bool:
    """Whether every evaluation record of ``unit`` is already in ``done``."""
    wanted = [f"{unit}/pairs"] + [f"{unit}/infill-k{k}" for k in cfg.gap_lengths]
    wanted += [f"{unit}/samplers"] if with_samplers else []
    return all(u in done for u in wanted)


def _evaluate_model(
    cfg: GroundTruthConfig, done: dict, log, unit: str, model_dir, lang, extra: dict, with_samplers: bool
):
    """The pair, infill (and sampler) records of the model in ``model_dir`` that ``done`` lacks."""
    if _evaluated(cfg, done, unit, with_samplers):
        return  # nothing to do: the model (in the ignored runs folder) is not needed
    mlm = symbol_mlm(model_dir, cfg.vocab_size)
    held = lang.sample(max(cfg.n_pairs, cfg.n_gaps), generator_for(cfg.seed, "gt-heldout"))
    if f"{unit}/pairs" not in done:
        t0 = time.perf_counter()
        rec = eval_pairs(mlm, lang, held, cfg.n_pairs, cfg.seed)
        yield {"unit": f"{unit}/pairs", "stage": "pairs", **extra, **rec, "seconds": time.perf_counter() - t0}
        log(f"{unit}/pairs done")
    for k in cfg.gap_lengths:
        if f"{unit}/infill-k{k}" not in done:
            t0 = time.perf_counter()
            rec = eval_infill(mlm, lang, held, cfg.n_gaps, k, cfg.beam_size, cfg.seed)
            yield {
                "unit": f"{unit}/infill-k{k}",
                "stage": "infill",
                **extra,
                **rec,
                "seconds": time.perf_counter() - t0,
            }
            log(f"{unit}/infill-k{k} done")
    if with_samplers and f"{unit}/samplers" not in done:
        rec = eval_samplers(mlm, lang, cfg, cfg.seed)
        yield {"unit": f"{unit}/samplers", "stage": "samplers", **extra, **rec}
        log(f"{unit}/samplers done")


def _coupling(cfg: GroundTruthConfig, done: dict, runs: Path, unit: str, J: float, progress: bool, log):
    lang = language(cfg, J)
    d = runs / f"potts-J{J:g}"
    if f"{unit}/train" not in done:
        r = _train(cfg, lang, d, steps=cfg.steps, mask_rate=cfg.mask_rate, progress=progress)
        yield {"unit": f"{unit}/train", "stage": "train", "coupling": J, "final": r.final, "history": list(r.history)}
        log(f"{unit} trained: {r.final}")
    yield from _evaluate_model(cfg, done, log, unit, d, lang, {"coupling": J}, with_samplers=True)


def _curve(cfg: GroundTruthConfig, done: dict, runs: Path, unit: str, s: int, progress: bool, log):
    from mlmprob.training import read_result
    from mlmprob.training.checkpoint import latest_checkpoint

    J = cfg.curve_coupling
    lang = language(cfg, J)
    d = runs / f"curve-J{J:g}"
    _train(cfg, lang, d, steps=max(cfg.curve_steps), mask_rate=cfg.mask_rate, stop_after=s, progress=progress)
    ck = latest_checkpoint(d)
    state = read_result(d)
    if state.step != s:
        raise MLMProbError(f"{d} is at step {state.step}, not {s}: remove it to redo the step curve")
    if not state.history or state.history[-1]["step"] != s:
        raise MLMProbError(f"{d} has no evaluation at step {s}")
    kl_now = state.history[-1]["kl"]
    yield from _evaluate_model(
        cfg, done, log, unit, ck, lang, {"coupling": J, "step": s, "unary_kl": kl_now}, with_samplers=True
    )


def _masking(cfg: GroundTruthConfig, done: dict, runs: Path, unit: str, what, progress: bool, log):
    rate, masking = what
    J = cfg.curve_coupling
    lang = language(cfg, J)
    d = runs / f"mask-J{J:g}-r{rate:g}-{masking}"
    k_rate = int(n_selected(torch.tensor([cfg.length]), rate)[0])
    if f"{unit}/train" not in done:
        r = _train(
            cfg,
            lang,
            d,
            steps=cfg.masking_steps,
            mask_rate=rate,
            masking=masking,
            n_train=cfg.masking_n_train,
            progress=progress,
        )
        yield {
            "unit": f"{unit}/train",
            "stage": "masking",
            "coupling": J,
            "mask_rate": rate,
            "k": k_rate,
            "masking": masking,
            "n_train": cfg.masking_n_train,
            "final": r.final,
            "history": list(r.history),
        }
        log(f"{unit} trained: {r.final}")
    # every family of methods on the model of this masking rate
    yield from _evaluate_model(
        cfg,
        done,
        log,
        unit,
        d,
        lang,
        {"coupling": J, "mask_rate": rate, "k": k_rate, "masking": masking},
        with_samplers=True,
    )


_STAGES = {"coupling": _coupling, "curve": _curve, "masking": _masking}


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(s) for s in text.split(","))


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in text.split(","))


def main(argv=None) -> int:
    return runner_main(GroundTruth(), argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
