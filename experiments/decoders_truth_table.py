"""The table of ``decoders_truth``: every decoder (``DECODERS``, name -> :class:`Entry`) and how its exact
output law (or, for the samplers, a fixed-seed Monte Carlo) is computed from one trained model's
:class:`Ctx`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from mlmprob.sampling.decoder_exact import exact_output_distribution, unmasking_law
from mlmprob.sampling.partial_states import exact_law, l2r, parallel, random_order
from mlmprob.training.data import SYMBOL_OFFSET, wrap_symbols

from .ground_truth_chain_eval import gibbs_stationary
from .ground_truth_common import adjacent_equal, all_states, state_index, tv


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
