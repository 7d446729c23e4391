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
unfinished trainings); ``python -m mlmprob.experiments.ground_truth_report`` writes the report.

    python -m mlmprob.experiments.ground_truth --out docs/results/ground_truth --runs runs/ground_truth

Code: this module trains the models, runs the stages and is the command line; ``ground_truth_eval``
holds the measurements, ``ground_truth_report`` the report, and both this module and the report take
the configuration and the exact quantities from ``ground_truth_common``.
"""

from __future__ import annotations

from ..argtypes import positive_int  # noqa: E402

import argparse
import shlex
import sys
import time
from pathlib import Path

import torch

from ..errors import MLMProbError, exit_status
from ..runtime.log import ResumableLog, RunMeta, append_record
from ..training.masking import generator_for, n_selected
# the shared and the evaluation names, importable from here as before the split
from .ground_truth_common import (BEAMS, JOINT_METHODS, RESULTS, GroundTruthConfig, adjacent_equal, all_states,
                                  empirical, kl, state_index, true_pair_joint, tv)
from .ground_truth_eval import eval_infill, eval_pairs, eval_samplers, language, symbol_mlm
from .ground_truth_report import write_report

__all__ = ["BEAMS", "JOINT_METHODS", "RESULTS", "GroundTruthConfig", "Results", "adjacent_equal", "all_states",
           "empirical", "eval_infill", "eval_pairs", "eval_samplers", "kl", "language", "main", "run", "state_index",
           "symbol_mlm", "true_pair_joint", "tv"]


# -- runner ---------------------------------------------------------------------------------------

def _train_config(cfg: GroundTruthConfig, *, steps: int, mask_rate: float, masking: str = "dynamic"):
    from ..training import TrainConfig

    return TrainConfig(hidden_size=cfg.hidden, num_layers=cfg.layers, num_heads=cfg.heads,
                       intermediate_size=cfg.intermediate, max_steps=steps, batch_size=cfg.batch_size, lr=cfg.lr,
                       warmup_steps=min(100, steps // 10), mask_rate=mask_rate, masking=masking, seed=cfg.seed,
                       eval_every=cfg.eval_every, checkpoint_every=min(500, steps), keep_checkpoints=1,
                       kl_sequences=256)


class Results:
    """Append-only JSONL of finished units, keyed by ``unit``: a :class:`~mlmprob.runtime.log.ResumableLog`
    held (locked) until :meth:`close`, its configuration in ``config.json`` beside it."""

    def __init__(self, path: Path, config: dict | None = None):
        self.path = path
        self.log = ResumableLog(path, config=config, meta=RunMeta(path.with_name("config.json"), key=None, indent=1))
        self.done: dict[str, dict] = {rec["unit"]: rec for rec in self.log.records() if "unit" in rec}

    def add(self, rec: dict) -> None:
        self.done[rec["unit"]] = rec
        self.log.append(rec)

    def close(self) -> None:
        self.log.close()


def _train(cfg: GroundTruthConfig, lang, out_dir: Path, *, steps: int, mask_rate: float, masking: str = "dynamic",
           n_train: int | None = None, stop_after: int | None = None, progress: bool = False):
    from ..training import SyntheticSource, train

    tc = _train_config(cfg, steps=steps, mask_rate=mask_rate, masking=masking)
    src = SyntheticSource(lang, n_train or cfg.n_train, cfg.n_heldout)
    return train(tc, src, out_dir, progress=progress, stop_after=stop_after)


def run(cfg: GroundTruthConfig, out: Path, runs: Path, *, stages=("coupling", "curve", "masking"),
        progress: bool = True, log=print) -> Results:
    out.mkdir(parents=True, exist_ok=True)
    runs.mkdir(parents=True, exist_ok=True)
    res = Results(out / RESULTS, cfg.to_dict())     # refuses another configuration or a second writer
    try:
        _run_stages(cfg, res, runs, stages, progress, log)
    finally:
        res.close()
    return res


def _evaluated(cfg: GroundTruthConfig, res: Results, unit: str, with_samplers: bool) -> bool:
    """Whether every evaluation record of ``unit`` is already in ``res``."""
    wanted = [f"{unit}/pairs"] + [f"{unit}/infill-k{k}" for k in cfg.gap_lengths]
    wanted += [f"{unit}/samplers"] if with_samplers else []
    return all(u in res.done for u in wanted)


def _evaluate_model(cfg: GroundTruthConfig, res: Results, log, unit: str, model_dir, lang, extra: dict,
                    with_samplers: bool) -> None:
    """The pair, infill (and sampler) records of the model in ``model_dir`` that ``res`` lacks."""
    if _evaluated(cfg, res, unit, with_samplers):
        return  # nothing to do: the model (in the ignored runs folder) is not needed
    mlm = symbol_mlm(model_dir, cfg.vocab_size)
    held = lang.sample(max(cfg.n_pairs, cfg.n_gaps), generator_for(cfg.seed, "gt-heldout"))
    if f"{unit}/pairs" not in res.done:
        t0 = time.perf_counter()
        rec = eval_pairs(mlm, lang, held, cfg.n_pairs, cfg.seed)
        res.add({"unit": f"{unit}/pairs", "stage": "pairs", **extra, **rec, "seconds": time.perf_counter() - t0})
        log(f"{unit}/pairs done")
    for k in cfg.gap_lengths:
        if f"{unit}/infill-k{k}" not in res.done:
            t0 = time.perf_counter()
            rec = eval_infill(mlm, lang, held, cfg.n_gaps, k, cfg.beam_size, cfg.seed)
            res.add({"unit": f"{unit}/infill-k{k}", "stage": "infill", **extra, **rec,
                     "seconds": time.perf_counter() - t0})
            log(f"{unit}/infill-k{k} done")
    if with_samplers and f"{unit}/samplers" not in res.done:
        rec = eval_samplers(mlm, lang, cfg, cfg.seed)
        res.add({"unit": f"{unit}/samplers", "stage": "samplers", **extra, **rec})
        log(f"{unit}/samplers done")


def _run_stages(cfg: GroundTruthConfig, res: Results, runs: Path, stages, progress: bool, log) -> None:
    from ..training import read_result
    from ..training.checkpoint import latest_checkpoint

    T = cfg.length

    def evaluated(unit: str, with_samplers: bool) -> bool:
        return _evaluated(cfg, res, unit, with_samplers)

    def evaluate_model(unit: str, model_dir, lang, extra: dict, with_samplers: bool) -> None:
        _evaluate_model(cfg, res, log, unit, model_dir, lang, extra, with_samplers)

    if "coupling" in stages:
        for J in cfg.couplings:
            lang = language(cfg, J)
            d = runs / f"potts-J{J:g}"
            unit = f"coupling/J{J:g}"
            if f"{unit}/train" not in res.done:
                r = _train(cfg, lang, d, steps=cfg.steps, mask_rate=cfg.mask_rate, progress=progress)
                res.add({"unit": f"{unit}/train", "stage": "train", "coupling": J, "final": r.final,
                         "history": list(r.history)})
                log(f"{unit} trained: {r.final}")
            evaluate_model(unit, d, lang, {"coupling": J}, with_samplers=True)

    if "curve" in stages:
        J = cfg.curve_coupling
        lang = language(cfg, J)
        d = runs / f"curve-J{J:g}"
        for s in cfg.curve_steps:
            unit = f"curve/step{s}"
            if evaluated(unit, with_samplers=True):
                continue
            _train(cfg, lang, d, steps=max(cfg.curve_steps), mask_rate=cfg.mask_rate, stop_after=s, progress=progress)
            ck = latest_checkpoint(d)
            state = read_result(d)
            if state.step != s:
                raise MLMProbError(f"{d} is at step {state.step}, not {s}: remove it to redo the step curve")
            if not state.history or state.history[-1]["step"] != s:
                raise MLMProbError(f"{d} has no evaluation at step {s}")
            kl_now = state.history[-1]["kl"]
            evaluate_model(unit, ck, lang, {"coupling": J, "step": s, "unary_kl": kl_now},
                           with_samplers=True)

    if "masking" in stages:
        J = cfg.curve_coupling
        lang = language(cfg, J)
        for rate in cfg.masking_rates:
            for masking in ("dynamic", "static"):
                unit = f"masking/r{rate:g}-{masking}"
                d = runs / f"mask-J{J:g}-r{rate:g}-{masking}"
                k_rate = int(n_selected(torch.tensor([T]), rate)[0])
                if f"{unit}/train" not in res.done:
                    r = _train(cfg, lang, d, steps=cfg.masking_steps, mask_rate=rate, masking=masking,
                               n_train=cfg.masking_n_train, progress=progress)
                    res.add({"unit": f"{unit}/train", "stage": "masking", "coupling": J, "mask_rate": rate,
                             "k": k_rate, "masking": masking, "n_train": cfg.masking_n_train,
                             "final": r.final, "history": list(r.history)})
                    log(f"{unit} trained: {r.final}")
                # every family of methods on the model of this masking rate
                evaluate_model(unit, d, lang, {"coupling": J, "mask_rate": rate, "k": k_rate,
                                                              "masking": masking}, with_samplers=True)


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(s) for s in text.split(","))


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in text.split(","))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", required=True, help="result folder (results.jsonl, config.json, report)")
    p.add_argument("--runs", required=True, help="folder for the trained models (not for the repository)")
    p.add_argument("--stages", default="coupling,curve,masking", help='comma-separated stages to run (coupling, curve, masking)')
    p.add_argument("--couplings", type=_floats, help='comma-separated coupling strengths J of the Potts chains')
    p.add_argument("--steps", type=positive_int, help='training steps per model')
    p.add_argument("--n-pairs", type=positive_int, help='position pairs evaluated per model')
    p.add_argument("--n-gaps", type=positive_int, help='infilling gaps evaluated per model')
    p.add_argument("--chains", type=positive_int, help='sampling chains per sampler')
    p.add_argument("--sample-epochs", type=positive_int, help='sampling epochs per chain')
    p.add_argument("--curve-steps", type=_ints, help='comma-separated checkpoints of the training curve')
    p.add_argument("--masking-rates", type=_floats, help='comma-separated masking rates of the masking stage')
    p.add_argument("--masking-steps", type=positive_int, help='training steps of the masking stage')
    p.add_argument("--threads", type=positive_int, help="torch CPU threads")
    p.add_argument("--no-progress", action="store_true", help='no progress bars')
    p.add_argument("--no-report", action="store_true", help='do not rewrite the report after the run')
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    over = {k: v for k, v in {"couplings": args.couplings, "steps": args.steps, "n_pairs": args.n_pairs,
                              "n_gaps": args.n_gaps, "chains": args.chains, "sample_epochs": args.sample_epochs,
                              "curve_steps": args.curve_steps, "masking_rates": args.masking_rates,
                              "masking_steps": args.masking_steps}.items() if v is not None}

    def body():
        cfg = GroundTruthConfig(**over)
        out = Path(args.out)
        t0 = time.time()
        run(cfg, out, Path(args.runs), stages=tuple(args.stages.split(",")), progress=not args.no_progress)
        append_record(out / "runs.jsonl", {"command": "python -m mlmprob.experiments.ground_truth "
                      + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
                      "wall_s": round(time.time() - t0, 1), "threads": torch.get_num_threads()})
        if not args.no_report:
            write_report(out)

    return exit_status(body)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
