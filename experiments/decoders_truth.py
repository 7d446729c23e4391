"""Every decoder against the truth (issue 30, item 4): exact output laws on the synthetic languages.

For Potts chains (``GroundTruthConfig``'s language: V symbols, length T, every sequence enumerated) and
a BERT MLM trained on exact samples per coupling and seed (as ``ground_truth_chain``: seed ``i`` trains
on language ``i``), the *exact* output distribution of each decoder in :data:`DECODERS` over all
``V**T`` sequences, from the model's conditionals at every partial state (``sampling.partial_states``,
``sampling.decoder_exact``): its TV
and KL(reference || decoder) to the true language and to the model's own ``p_mix`` (the uniform mixture
over orders of the chain-rule distribution), and its expected number of sequential model calls per
sample. The speculative sampler's law is ``p_mix`` (its theorem; checked here by a fixed-seed Monte
Carlo of ``mlmprob.sample(method="speculative")``, which also gives its calls per sample with a
standard error); mask-predict is argmax-based (one deterministic output ``x``: TV = 1 - p(x), KL
infinite); degenerate Gibbs's stationary law and ``exp(-E_local)/Z`` (MH's target) are reference rows
with no call count (asymptotic chains).

Adding a decoder is one entry of :data:`DECODERS`; a rerun computes only the missing
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from mlmprob.argtypes import positive_int
from mlmprob.errors import MLMProbError
from mlmprob.sampling.decoder_exact import exact_output_distribution, unmasking_law
from mlmprob.sampling.partial_states import exact_law, l2r, parallel, partial_log_probs, random_order
from mlmprob.training.data import SYMBOL_OFFSET, wrap_symbols

from .ground_truth import _train
from .ground_truth_chain_eval import gibbs_stationary, language_tables, order_log_probs
from .ground_truth_common import GroundTruthConfig, adjacent_equal, all_states, kl, state_index, tv
from .ground_truth_eval import language, symbol_mlm
from .runner import Experiment, Run, RunMeta, build_parser, run_cli, run_units

STEPS = 3000


@dataclass
class Ctx:
    """One trained model: ``mlm`` (symbol ids), ``tables`` and ``lp`` (its exact conditionals),
    ``truth`` and ``mix`` (log-laws ``[V**T]``), ``V``, ``T``, ``seed``, ``mc_draws``, ``wrap``."""

    mlm: object
    tables: dict
    lp: torch.Tensor
    truth: torch.Tensor
    mix: torch.Tensor
    V: int
    T: int
    seed: int
    mc_draws: int
    wrap: Callable = wrap_symbols
    offset: int = SYMBOL_OFFSET


@dataclass(frozen=True)
class Entry:
    """A row of the table: ``family`` (for the figure), ``evaluate(ctx) -> dict`` with ``log_law``
    ``[V**T]`` or ``point`` (one deterministic output's index), ``calls`` (None: asymptotic) and extras;
    ``note``: what the row is."""

    family: str
    evaluate: Callable[[Ctx], dict]
    note: str = ""


def law_entry(family: str, rule: Callable, note: str = "") -> Entry:
    """A decoder given by a ``sampling.partial_states`` rule: its exact law and expected calls."""

    def evaluate(ctx: Ctx) -> dict:
        law = exact_law(rule, ctx.lp, ctx.V, ctx.T)
        return {"log_law": law.log_probs, "calls": law.calls}

    return Entry(family, evaluate, note)


def unmasking_entry(family: str, note: str = "", **settings) -> Entry:
    """``sampling.unmasking.Unmasking(**settings)`` (confidence / margin / entropy order, schedules, blocks,
    ReMDM remasking): its exact law by ``sampling.decoder_exact.unmasking_law`` (the kernel's plan and rules)."""

    def evaluate(ctx: Ctx) -> dict:
        from mlmprob.sampling.unmasking import Unmasking

        law = unmasking_law(Unmasking(ctx.mlm, **settings), ctx.lp, ctx.V, ctx.T)
        return {"log_law": law.log_probs, "calls": law.calls}

    return Entry(family, evaluate, note)


def adaptive_entry(note: str = "", **settings) -> Entry:
    """``sampling.adaptive.Adaptive(**settings)``: its exact law by ``sampling.decoder_exact``, fed the model's
    exact conditionals; calls and forward rows per sample (the pair rows)."""

    def evaluate(ctx: Ctx) -> dict:
        from mlmprob.sampling.adaptive import Adaptive

        law = exact_output_distribution(Adaptive(ctx.mlm, **settings), ctx.lp, ctx.V, ctx.T)
        return {"log_law": law.probs.log(), "calls": law.calls, "forward_rows_per_sample": law.rows, "steps": law.steps}

    return Entry("adaptive", evaluate, note)


def _symbols(ids: torch.Tensor, ctx: Ctx) -> torch.Tensor:
    """Model ids ``[..., L]`` -> symbols ``[..., T]`` (``wrap`` puts the symbols in the middle)."""
    shift = (ids.shape[-1] - ctx.T) // 2
    return ids[..., shift : shift + ctx.T] - ctx.offset


def _mc(ctx: Ctx, method: str, tag: str, **kw):
    """``mlmprob.sample`` one epoch of ``ctx.mc_draws`` chains from the all-mask start, fixed seed."""
    from mlmprob.sampling.api import sample

    g = torch.Generator().manual_seed(ctx.seed * 1000 + sum(map(ord, tag)))
    start = ctx.wrap(torch.zeros(ctx.mc_draws, ctx.T, dtype=torch.long))
    return sample(ctx.mlm, start, method=method, epochs=1, order="random", generator=g, **kw)


def _stat_tv(idx: torch.Tensor, log_law: torch.Tensor, ctx: Ctx) -> float:
    """TV between the draws' and ``log_law``'s distributions of the Potts statistic (equal adjacent pairs)."""
    s = adjacent_equal(all_states(ctx.V, ctx.T))
    want = torch.zeros(ctx.T, dtype=torch.float64).index_add_(0, s, log_law.exp())
    got = torch.bincount(s[idx], minlength=ctx.T).double() / len(idx)
    return tv(want, got)


def speculative_entry(k: int) -> Entry:
    """Speculative ancestral sampling (``draft_k = k``, random orders): law ``p_mix``; calls per sample,
    rounds and forward rows by a fixed-seed Monte Carlo, with an ancestral Monte Carlo as the noise floor."""

    def evaluate(ctx: Ctx) -> dict:
        r = _mc(ctx, "speculative", f"spec{k}", draft_k=k)
        a = _mc(ctx, "ancestral", f"spec{k}")
        n = ctx.mc_draws
        idx = {m: state_index(_symbols(x.samples[0], ctx), ctx.V) for m, x in (("spec", r), ("anc", a))}
        emp = {m: torch.bincount(i, minlength=ctx.V**ctx.T).double() / n for m, i in idx.items()}
        calls = r.calls[0].double()
        return {
            "log_law": ctx.mix,
            "calls": float(calls.mean()),
            "calls_se": float(calls.std() / math.sqrt(n)),
            "rounds": float(r.rounds[0].double().mean()),
            "forward_rows_per_sample": r.forward_rows / n,
            "ancestral_calls": float(a.calls[0].double().mean()),
            "ancestral_forward_rows_per_sample": a.forward_rows / n,
            "mc_draws": n,
            "mc_tv_mix": tv(emp["spec"], ctx.mix.exp()),
            "mc_tv_mix_ancestral": tv(emp["anc"], ctx.mix.exp()),
            "mc_stat_tv": _stat_tv(idx["spec"], ctx.mix, ctx),
            "mc_stat_tv_ancestral": _stat_tv(idx["anc"], ctx.mix, ctx),
        }

    return Entry("speculative", evaluate, f"law p_mix exactly (theorem); calls: Monte Carlo, draft_k={k}")


def mask_predict_entry(iterations: int) -> Entry:
    """Mask-predict (argmax refinement): one deterministic output."""

    def evaluate(ctx: Ctx) -> dict:
        from mlmprob.sampling.maskpredict import mask_predict

        r = mask_predict(ctx.mlm, ctx.wrap(torch.zeros(1, ctx.T, dtype=torch.long)), iterations)
        x = _symbols(r.ids, ctx)
        return {
            "point": int(state_index(x, ctx.V)[0]),
            "calls": float(iterations),
            "forward_rows_per_sample": r.forward_rows,
        }

    return Entry("argmax", evaluate, "deterministic output x: TV = 1 - p(x), KL infinite")


def _gibbs(ctx: Ctx) -> dict:
    law, conv = gibbs_stationary(ctx.tables, ctx.V, ctx.T, start=ctx.mix)
    return {"log_law": law, "calls": None, **conv}


def _pll_target(ctx: Ctx) -> dict:
    e = sum(ctx.tables[1 << t][:, t] for t in range(ctx.T))
    return {"log_law": e - torch.logsumexp(e, 0), "calls": None}


# The table of decoders: name -> Entry. Adding a decoder is one line here.
DECODERS: dict[str, Entry] = {
    "ancestral l2r": law_entry("ancestral", l2r, note="p_l2r, T calls"),
    "ancestral random": law_entry("ancestral", random_order, note="p_mix, T calls"),
    "speculative k2": speculative_entry(2),
    "speculative k4": speculative_entry(4),
    "parallel k2": law_entry("parallel", parallel(2), note="random order, 2 tokens per step"),
    "parallel k3": law_entry("parallel", parallel(3), note="random order, 3 tokens per step"),
    "parallel k6": law_entry("parallel", parallel(6), note="one pass: product of the all-mask marginals"),
    **{
        f"{kind} S{s}": unmasking_entry(kind, f"{s} steps, tokens drawn, best {kind} kept", score=kind, steps=s)
        for kind in ("confidence", "margin", "entropy")
        for s in (2, 3, 6)
    },
    "confidence S3 cosine": unmasking_entry("confidence", "MaskGIT's cosine schedule", steps=3, schedule="cosine"),
    "semi-AR b2 S3": unmasking_entry("semi-AR", "blocks of 2, a block a step (confidence)", steps=3, block_length=2),
    "semi-AR b3 S2": unmasking_entry("semi-AR", "blocks of 3, a block a step", steps=2, block_length=3),
    "semi-AR b3 S4": unmasking_entry("semi-AR", "blocks of 3, 1 then 2 by confidence", steps=4, block_length=3),
    "semi-AR b3 S6": unmasking_entry("semi-AR", "blocks of 3, confidence order inside", steps=6, block_length=3),
    "ReMDM conf S3 +3 r0.2": unmasking_entry(
        "ReMDM", "confidence S3, then 3 remask-redraw steps at 0.2", steps=3, remask=0.2, remask_steps=3
    ),
    "ReMDM margin S3 +3 r0.2": unmasking_entry(
        "ReMDM", "margin S3, then 3 remask-redraw steps at 0.2", score="margin", steps=3, remask=0.2, remask_steps=3
    ),
    "ReMDM conf S6 +12 r0.1": unmasking_entry(
        "ReMDM", "confidence S6, then 12 remask-redraw steps at 0.1", steps=6, remask=0.1, remask_steps=12
    ),
    **{
        f"adaptive t{t:g}": adaptive_entry(f"dependence threshold {t:g} (margin order), one call a step", threshold=t)
        for t in (0.01, 0.05, 0.2)
    },
    **{
        f"adaptive t{t:g} top2": adaptive_entry(
            f"threshold {t:g}, pair rows at the 2 likeliest values (two calls a step)", threshold=t, pair_top_k=2
        )
        for t in (0.05, 0.5)
    },
    **{f"mask-predict N{n}": mask_predict_entry(n) for n in (1, 3, 6)},
    "Gibbs (stationary)": Entry("reference", _gibbs, "degenerate Gibbs's exact stationary law"),
    "MH target exp(-E_local)/Z": Entry("reference", _pll_target, "MH's target, enumerated"),
}


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
