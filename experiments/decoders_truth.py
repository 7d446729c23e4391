"""Every decoder against the truth (issue 30, item 4): exact output laws on the synthetic languages.

For Potts chains (``GroundTruthConfig``'s language: V symbols, length T, every sequence enumerated) and
a BERT MLM trained on exact samples per coupling and seed (as ``ground_truth_chain``: seed ``i`` trains
on language ``i``), the *exact* output distribution of each decoder in :data:`DECODERS` over all
``V**T`` sequences, from the model's conditionals at every partial state (``sampling.partial_states``,
``sampling.decoder_exact``): its TV and KL(reference || decoder) to the true language and to the model's own ``p_mix`` (the uniform mixture
over orders of the chain-rule distribution), and its expected number of sequential model calls per
sample. The speculative sampler's law is ``p_mix`` (its theorem; checked here by a fixed-seed Monte
Carlo of ``mlmprob.sample(method="speculative")``, which also gives its calls per sample with a
standard error); mask-predict is argmax-based (one deterministic output ``x``: TV = 1 - p(x), KL
infinite); degenerate Gibbs's stationary law and ``exp(-E_local)/Z`` (MH's target) are reference rows
with no call count (asymptotic chains).

Adding a decoder is one entry of :data:`~experiments.decoders_truth_table.DECODERS`; a rerun computes only the missing
``J/seed/decoder`` units. Records go to ``results.jsonl`` as units finish; models go to ``--runs``
(outside the repository); ``README.md`` and ``fig_decoders.png`` are rewritten from the records.

    python -m experiments.decoders_truth --out docs/results/decoders/truth \\
        --runs /work/runs-decoders/models --couplings 1,3,0.5 --seeds 0,1,2 --threads 1
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shlex
import time
from pathlib import Path

import torch

from mlmprob.argtypes import positive_int
from mlmprob.errors import MLMProbError
from mlmprob.sampling.partial_states import exact_law, l2r, partial_log_probs, random_order
from mlmprob.training.data import SYMBOL_OFFSET, wrap_symbols

from .decoders_truth_table import DECODERS, Ctx
from .ground_truth import _train
from .ground_truth_chain_eval import language_tables, order_log_probs
from .ground_truth_common import GroundTruthConfig, kl, tv
from .ground_truth_eval import language, symbol_mlm
from .runner import Experiment, Run, RunMeta, build_parser, run_cli, run_units

STEPS = 3000


def metrics(out: dict, ctx: Ctx) -> dict:
    """TV and KL(reference || decoder) to the truth and to ``p_mix``; ``mass`` of the law."""
    rec = {k: v for k, v in out.items() if k not in ("log_law", "point")}
    if "point" in out:
        i = out["point"]
        return {
            **rec,
            "tv_truth": 1 - float(ctx.truth[i].exp()),
            "kl_truth": None,
            "tv_model": 1 - float(ctx.mix[i].exp()),
            "kl_model": None,
            "mass": 1.0,
        }
    q = out["log_law"]
    return {
        **rec,
        "tv_truth": tv(ctx.truth.exp(), q.exp()),
        "kl_truth": kl(ctx.truth, q),
        "tv_model": tv(ctx.mix.exp(), q.exp()),
        "kl_model": kl(ctx.mix, q),
        "mass": float(q.exp().sum()),
    }


def model_context(
    mlm, lang, seed: int, mc_draws: int, wrap=wrap_symbols, offset: int = SYMBOL_OFFSET
) -> tuple[Ctx, dict]:
    """The exact tables of ``mlm`` on ``lang`` and the checks of the engine against them: ``p_mix`` from
    the ``T!`` order tables vs the engine's random-order law, and the l2r law vs ``mlmprob.loglik``."""
    from mlmprob.likelihood import loglik

    V, T, states, truth, tables, orders = language_tables(mlm, lang, wrap, offset)
    mix = torch.logsumexp(order_log_probs(tables, T, orders), 0) - math.log(len(orders))
    lp = partial_log_probs(tables, V, T)
    ctx = Ctx(mlm, tables, lp, truth, mix, V, T, seed, mc_draws, wrap, offset)
    rnd = exact_law(random_order, lp, V, T).log_probs
    left = exact_law(l2r, lp, V, T).log_probs
    pick = torch.randint(len(states), (8,), generator=torch.Generator().manual_seed(seed))
    ll = loglik(mlm, wrap(states[pick]), order="l2r").per_order[:, 0]  # every non-special position
    return ctx, {
        "check_mix": float((rnd.exp() - mix.exp()).abs().max()),
        "check_l2r_loglik": float((ll - left[pick]).abs().max()),
    }


def run(cfg: GroundTruthConfig, out: Path, runs: Path, seeds, decoders=None, mc_draws: int = 4000, log=print):
    """Every (coupling, seed, decoder) unit missing from ``out/results.jsonl`` (the runner's log, held while it runs)."""
    argv = [
        "--out",
        str(out),
        "--runs",
        str(runs),
        "--couplings",
        ",".join(f"{J:g}" for J in cfg.couplings),
        "--seeds",
        ",".join(str(x) for x in seeds),
        "--mc-draws",
        str(mc_draws),
    ]
    if decoders:
        argv += ["--decoders", ";".join(decoders)]
    exp = DecodersTruth(cfg=cfg, log=log)
    args = build_parser(exp).parse_args(argv)
    r = Run(args, argv, Path(out), f"python -m {exp.prog} " + shlex.join(argv), experiment=exp)
    exp.setup(r)
    run_units(exp, r, journal=False)


class DecodersTruth(Experiment):
    """Units: (coupling, seed): the trained model's record and one record per decoder (``unit``:
    ``J{J}/seed{seed}/{decoder}``); a rerun trains and evaluates only what is missing."""

    prog = "experiments.decoders_truth"
    out_help = "result folder (results.jsonl, config.json, README.md, figure)"
    report_only_help = "rewrite README.md and the figure only"

    def __init__(self, cfg: GroundTruthConfig | None = None, log=print):
        self.cfg, self.log = cfg, log

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--runs", help="folder for the trained models (outside the repository); required unless --report-only"
        )
        p.add_argument(
            "--couplings", type=_tuple(float), default=(1.0, 3.0), help="comma-separated coupling strengths J"
        )
        p.add_argument(
            "--seeds", type=_tuple(int), default=(0,), help="comma-separated training seeds (one model each)"
        )
        p.add_argument(
            "--decoders",
            type=lambda s: tuple(s.split(";")),
            help="semicolon-separated decoder names (default: every one of the table)",
        )
        p.add_argument("--steps", type=positive_int, default=STEPS, help="training steps per model")
        p.add_argument("--mc-draws", type=positive_int, default=4000, help="Monte Carlo draws of the speculative rows")

    def check(self, args, parser) -> None:
        if not args.report_only and not args.runs:
            parser.error("--runs is required unless --report-only")

    def setup(self, run: Run) -> None:
        a = run.args
        if self.cfg is None:
            self.cfg = GroundTruthConfig(
                couplings=a.couplings, steps=a.steps, curve_steps=(a.steps,), eval_every=math.gcd(250, a.steps)
            )
        names = list(a.decoders or DECODERS)
        unknown = [n for n in names if n not in DECODERS]
        if unknown:
            raise MLMProbError(f"unknown decoders {unknown}; known: {list(DECODERS)}")
        run.state["names"] = names
        run.out.mkdir(parents=True, exist_ok=True)

    def config(self, run: Run) -> dict:
        meta = {k: v for k, v in self.cfg.to_dict().items() if k not in ("couplings", "seed", "language_seed")}
        return {**meta, "language_seed": "the training seed", "mc_draws": run.args.mc_draws}

    def meta(self, run: Run) -> RunMeta:
        return RunMeta(run.out / "config.json", key=None, indent=1)

    def key(self, record: dict) -> str:
        return record.get("unit")

    def units(self, run: Run):
        return [(J, seed) for J in self.cfg.couplings for seed in run.args.seeds]

    def _keys(self, run: Run, unit) -> dict:
        J, seed = unit
        return {n: f"J{J:g}/seed{seed}/{n}" for n in ["model"] + run.state["names"]}

    def finished(self, run: Run, unit) -> bool:
        return all(k in run.done for k in self._keys(run, unit).values())

    def label(self, unit) -> str:
        return f"J{unit[0]:g}/seed{unit[1]}"

    def run_unit(self, run: Run, unit):
        J, seed = unit
        keys = self._keys(run, unit)
        cfg = self.cfg
        c = dataclasses.replace(cfg, seed=seed, language_seed=seed)
        lang = language(c, J)
        d = Path(run.args.runs) / f"chain-J{J:g}-seed{seed}-lang{seed}"
        t0 = time.perf_counter()
        _train(c, lang, d, steps=cfg.steps, mask_rate=cfg.mask_rate, stop_after=cfg.steps)
        ctx, checks = _context(d, lang, c, seed, run.args.mc_draws)
        base = {"coupling": J, "seed": seed, "language_seed": seed}
        if keys["model"] not in run.done:
            yield {"unit": keys["model"], **base, **checks, **_train_state(d), "seconds": time.perf_counter() - t0}
        for n in run.state["names"]:
            if keys[n] not in run.done:
                t1 = time.perf_counter()
                rec = metrics(DECODERS[n].evaluate(ctx), ctx)
                yield {
                    "unit": keys[n],
                    **base,
                    "decoder": n,
                    "family": DECODERS[n].family,
                    **rec,
                    "seconds": time.perf_counter() - t1,
                }
                self.log(
                    f"{keys[n]}: calls {rec['calls']}, TV truth {rec['tv_truth']:.3f}, TV p_mix {rec['tv_model']:.3f}"
                )

    def report(self, run: Run) -> None:
        from .decoders_truth_report import write_report

        if not (run.out / "results.jsonl").is_file():
            raise MLMProbError(f"{run.out} has no results.jsonl to report")
        write_report(run.out, DECODERS)


def _context(d: Path, lang, cfg: GroundTruthConfig, seed: int, mc_draws: int):
    from mlmprob.training.checkpoint import latest_checkpoint

    return model_context(symbol_mlm(latest_checkpoint(d), cfg.vocab_size), lang, seed, mc_draws)


def _train_state(d: Path) -> dict:
    from mlmprob.training import read_result

    state = read_result(d)
    return {"step": state.step, "unary_kl": state.history[-1]["kl"] if state.history else None}


def _tuple(kind):
    return lambda text: tuple(kind(s) for s in text.split(","))


def main(argv=None) -> int:
    return run_cli(DecodersTruth(), argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
