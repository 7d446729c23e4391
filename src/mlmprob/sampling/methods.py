"""The built-in sampling methods: one small frozen spec each (its own fields beside
:class:`~mlmprob.sampling.spec.SamplerSpec`'s shared ones), a kernel factory (binds the settings, returns the kernel:
``init``/``step``; the kernels and torch are imported when one is built) and a registry entry.

Adding a method (docs/architecture.md, "Adding a sampling method"): a spec class here (or in the method's
module) deriving from ``SamplerSpec`` (or ``DrawSpec``/``MCMCSpec``) with ``method`` redefined as its name and
its options as :func:`~mlmprob.sampling.spec.option` fields, a factory ``(mlm, spec) -> kernel``, and one
``register(Method(...))``. Its flags, ``--help`` group, refusals, stored settings and resume check follow.

>>> SamplerSpec(method="gibbs").burn_in, SamplerSpec(method="ancestral").burn_in   # the defaults' one place
(5, 0)
>>> SamplerSpec(method="unmask").settings()["score"], SamplerSpec(method="adaptive").score
('confidence', 'margin')
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..argtypes import nonnegative_float, nonnegative_int, positive_float, positive_int
from ..errors import MLMProbError
from .options import (
    DEFAULT_DRAFT_K,
    DEFAULT_STEPS,
    DEFAULT_THRESHOLD,
    INITS,
    SCHEDULES,
    SCORES,
    check_adaptive,
    check_positive_int,
    check_unmasking,
)
from .schedules import LinearAnneal, LinearBlockSize, ScheduleLike, as_schedule, schedule_text
from .spec import Method, NotForMethod, SamplerSpec, option, option_names, register

if TYPE_CHECKING:
    from ..likelihood.orders import OrderSpec

# K, ("linear", START, END[, EPOCHS]) as ``mlmprob sample --block-size START:END[:EPOCHS]`` parses it, or a schedule
BlockLike = int | tuple | ScheduleLike
ORDERS = ("random", "l2r", "r2l")


def block_size_arg(text: str):
    """``--block-size``: ``K`` or ``START:END[:EPOCHS]`` (linear decrease, Goyal et al. App. D)."""
    parts = text.split(":")
    try:
        nums = [positive_int(p) for p in parts]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"block size must be K or START:END[:EPOCHS] with positive integers, got {text!r}"
        ) from None
    if len(nums) == 1:
        return nums[0]
    if len(nums) in (2, 3):
        return ("linear", *nums)
    raise argparse.ArgumentTypeError(f"block size must be K or START:END[:EPOCHS], got {text!r}")


def block_text(block_size) -> str:
    """``block_size`` as ``--block-size`` writes it (a schedule object: its stable text).

    >>> block_text(2), block_text(("linear", 4, 1)), block_text(("linear", 4, 1, 3))
    ('2', '4:1', '4:1:3')
    """
    if isinstance(block_size, tuple):
        return ":".join(str(x) for x in block_size[1:])
    if callable(block_size):
        return schedule_text(block_size)
    return str(block_size)


def _order_json(spec, order):
    """``order`` as a JSON value: its name, or the given orders as lists."""
    if isinstance(order, str):
        return order
    import torch

    return torch.as_tensor(order).tolist()


def _same(name: str, default):
    """The shared field ``name`` with this method's default (its place, help and flag stay)."""
    return field(default=default, metadata=SamplerSpec.__dataclass_fields__[name].metadata)


def _takers(name: str, value) -> tuple:
    """The methods whose ``name`` flag takes ``value`` (``order='r2l'``: the exact draws)."""
    from .spec import REGISTRY

    return tuple(
        m
        for m in option_names()[name]
        if value in REGISTRY[m].spec.__dataclass_fields__[name].metadata.get("choices", (value,))
    )


# -- MCMC: Metropolis-Hastings and degenerate Gibbs -----------------------------------------------------------
@dataclass(frozen=True)
class MCMCSpec(SamplerSpec):
    """The fields of the MCMC samplers: blocks of ``block_size`` positions swept in ``order`` from ``init``."""

    burn_in: int = _same("burn_in", 5)
    block_size: BlockLike = option(
        1,
        "K, or START:END[:EPOCHS] decreasing linearly",
        type=block_size_arg,
        json=lambda s, v: block_text(v),
        stored=lambda s: schedule_text(s.schedules()[0]),
    )
    order: OrderSpec = option(
        "random", "order in which positions are visited within an epoch", choices=("random", "l2r"), json=_order_json
    )
    init: str = option(
        "given",
        "initial state of the free positions: the input, the MLM's argmax, or random tokens",
        choices=INITS,
    )

    def __post_init__(self):
        super().__post_init__()
        if self.init not in INITS:
            raise MLMProbError(f"init must be one of {INITS}, got {self.init!r}")
        if isinstance(self.order, str) and self.order not in ("random", "l2r"):
            if self.order in ORDERS:
                why = f"{self.method} sweeps in random or l2r order"
                raise NotForMethod("order", self.order, _takers("order", self.order), self.method, True, why)
            raise MLMProbError(f"order must be 'random' or 'l2r', got {self.order!r}")
        self.schedules()  # block size and annealing schedules check their numbers

    def _block_schedule(self):
        bs = self.block_size
        if isinstance(bs, tuple):
            if len(bs) not in (3, 4) or bs[0] != "linear":
                raise MLMProbError(f"block_size must be K, ('linear', START, END[, EPOCHS]) or a schedule, got {bs!r}")
            _, start, end, *n = bs
            bs = LinearBlockSize(start, end, n[0] if n else self.total_epochs)
        if not callable(bs) and (isinstance(bs, bool) or not isinstance(bs, int) or bs < 1):
            raise MLMProbError(
                f"block_size must be a positive integer K, ('linear', START, END[, EPOCHS]) or a schedule, got {bs!r}"
            )
        return as_schedule(bs, "block_size")

    def schedules(self):
        return self._block_schedule(), None


def _target_json(spec, value):
    return schedule_text(value) if callable(value) else value


@dataclass(frozen=True)
class MHSpec(MCMCSpec):
    """Metropolis-Hastings: the target ``exp(-E / T)`` at ``target_temperature`` (a number, annealed by ``anneal``
    per epoch down to ``temperature_floor``, or a schedule)."""

    method: str = _same("method", "mh")
    target_temperature: ScheduleLike = option(
        1.0,
        "temperature of the target distribution exp(-E / T)",
        type=positive_float,
        json=_target_json,
        stored=lambda s: schedule_text(s.schedules()[1]),
    )
    anneal: float = option(0.0, "subtract this from the target temperature per epoch", type=nonnegative_float)
    temperature_floor: float = option(0.05, "lowest target temperature annealing reaches", type=positive_float)

    def __post_init__(self):
        if not (self.anneal >= 0) or math.isinf(self.anneal):
            raise MLMProbError(f"anneal must be a finite number >= 0, got {self.anneal!r}")
        if self.anneal > 0 and callable(self.target_temperature):
            raise MLMProbError("give anneal with a number target_temperature, not with a schedule")
        if not callable(self.target_temperature):
            t = self.target_temperature
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0 or math.isinf(t):
                raise MLMProbError(f"target_temperature must be finite and > 0, got {t!r}")
        super().__post_init__()

    def schedules(self):
        tt = self.target_temperature
        if self.anneal > 0:
            tt = LinearAnneal(tt, self.anneal, self.temperature_floor)
        else:
            LinearAnneal(1.0, 0.0, self.temperature_floor)  # the floor is checked either way
        return self._block_schedule(), as_schedule(tt, "target_temperature")


@dataclass(frozen=True)
class GibbsSpec(MCMCSpec):
    """Degenerate Gibbs: every proposal accepted (no target temperature)."""

    method: str = _same("method", "gibbs")


def _mh(mlm, s: MHSpec):
    from .kernels import MetropolisHastings

    bs, tt = s.schedules()
    return MetropolisHastings(mlm, s.energy, bs, s.proposal, tt, s.order, s.score_all)


def _gibbs(mlm, s: GibbsSpec):
    from .kernels import DegenerateGibbs

    return DegenerateGibbs(mlm, s.schedules()[0], s.proposal, s.order, s.score_all)


# -- independent draws: every epoch one draw from all-masked ----------------------------------------------------
@dataclass(frozen=True)
class DrawSpec(SamplerSpec):
    """The fields of every method whose epochs are independent draws: ``energies`` (score each draw: one more
    pass, counted in the draw's cost)."""

    energies: bool = option(
        False,
        "also score every draw: E_local and E_raw (one more pass of one row per scored position, counted in "
        "calls_per_sample and forward_rows_per_sample) in the rows, the energy trace and ess/rhat",
        action="store_true",
    )

    @property
    def records_energies(self) -> bool:
        return self.energies


@dataclass(frozen=True)
class OrderedDrawSpec(DrawSpec):
    order: OrderSpec = option(
        "random",
        "the order positions are revealed in (random: a fresh order per chain and epoch)",
        choices=ORDERS,
        json=_order_json,
    )

    def __post_init__(self):
        super().__post_init__()
        if isinstance(self.order, str) and self.order not in ORDERS:
            raise MLMProbError(f"order must be one of {ORDERS} or explicit orders, got {self.order!r}")


@dataclass(frozen=True)
class AncestralSpec(OrderedDrawSpec):
    """Exact draws of the chain-rule distribution ``p_sigma`` along ``order``, ``tokens_per_step`` at a time."""

    method: str = _same("method", "ancestral")
    tokens_per_step: int = option(
        1,
        "positions revealed per step, each from its conditional given the same context (parallel decoding: "
        "approximate for K > 1)",
        type=positive_int,
    )

    def __post_init__(self):
        super().__post_init__()
        check_positive_int(self.tokens_per_step, "tokens_per_step")


@dataclass(frozen=True)
class SpeculativeSpec(OrderedDrawSpec):
    """The ancestral draws in fewer sequential calls: ``draft_k`` positions drafted per round."""

    method: str = _same("method", "speculative")
    draft_k: int = option(
        DEFAULT_DRAFT_K,
        "positions drafted per round from one pass and verified in one batch (at most the free positions are "
        "drafted); the draws stay exact",
        type=positive_int,
    )

    def __post_init__(self):
        if self.draft_k is None:  # None: the default, as before the specs were split
            object.__setattr__(self, "draft_k", DEFAULT_DRAFT_K)
        super().__post_init__()
        check_positive_int(self.draft_k, "draft_k")

    @property
    def draft_k_used(self) -> int:
        return self.draft_k


@dataclass(frozen=True)
class DecoderSpec(DrawSpec):
    """The parallel decoders: ``score`` says which masked positions are revealed first."""

    score: str = option(
        None,
        "which masked positions are revealed first: the probability of the drawn candidate (confidence; "
        "MaskGIT, LLaDA), top-1 minus top-2 probability (margin) or minus the entropy (entropy; Dream)",
        choices=SCORES,
    )

    def __post_init__(self):
        if self.score is None:  # None: the method's default
            object.__setattr__(self, "score", type(self).__dataclass_fields__["score"].default)
        super().__post_init__()

    @property
    def score_used(self) -> str:
        return self.score


def _score(default: str):
    return field(default=default, metadata=DecoderSpec.__dataclass_fields__["score"].metadata)


@dataclass(frozen=True)
class UnmaskSpec(DecoderSpec):
    """Unmasking by ``score`` in ``steps`` steps (MaskGIT, LLaDA, Dream), blocks and ReMDM remasking."""

    method: str = _same("method", "unmask")
    score: str = _score("confidence")
    steps: int = option(
        DEFAULT_STEPS, "model calls that reveal the free positions (each step one pass)", type=positive_int
    )
    schedule: str = option(
        "linear", "positions revealed per step: linear (equal shares) or cosine (MaskGIT)", choices=SCHEDULES
    )
    block_length: int | None = option(
        None,
        "decode the free positions in left-to-right blocks of this many (LLaDA's semi-autoregressive decoding), "
        "the steps shared among the blocks",
        type=positive_int,
    )
    remask: float = option(
        0.0,
        "after the steps, each --remask-steps step masks every free position again with this probability and "
        "redraws them from one pass (ReMDM, its loop variant)",
        type=nonnegative_float,
    )
    remask_steps: int = option(
        0, "remasking steps after the unmasking steps (needs --remask > 0; at most 10,000)", type=nonnegative_int
    )

    def __post_init__(self):
        super().__post_init__()
        check_unmasking(self.score, self.steps, self.schedule, self.block_length, self.remask, self.remask_steps)


@dataclass(frozen=True)
class AdaptiveSpec(DecoderSpec):
    """Reveal together only positions whose measured pair dependence is below ``threshold``."""

    method: str = _same("method", "adaptive")
    score: str = _score("margin")
    threshold: float = option(
        DEFAULT_THRESHOLD,
        "reveal together only positions whose measured pair dependence (expected KL, nats) is below this; 0: one "
        "position per step",
        type=nonnegative_float,
    )
    max_tokens: int | None = option(None, "at most this many positions per step", type=positive_int)
    pair_top_k: int | None = option(
        None,
        "measure the dependence on each position's K most probable values only (default: all; fewer rows, one "
        "more sequential call per step)",
        type=positive_int,
    )

    def __post_init__(self):
        super().__post_init__()
        check_adaptive(self.score, self.threshold, self.max_tokens, self.pair_top_k)


def _ancestral(mlm, s: AncestralSpec):
    from .ancestral import Ancestral

    return Ancestral(mlm, s.order, s.tokens_per_step, s.proposal, s.score_all)


def _speculative(mlm, s: SpeculativeSpec):
    from .speculative import Speculative

    return Speculative(mlm, s.order, s.draft_k, s.proposal, s.score_all)


def _unmask(mlm, s: UnmaskSpec):
    from .unmasking import Unmasking

    return Unmasking(
        mlm, s.score, s.steps, s.schedule, s.block_length, s.remask, s.remask_steps, s.proposal, s.score_all
    )


def _adaptive(mlm, s: AdaptiveSpec):
    from .adaptive import Adaptive

    return Adaptive(mlm, s.threshold, s.score, s.max_tokens, s.pair_top_k, s.proposal, s.score_all)


def own_settings(spec) -> dict:
    """The settings of ``spec``'s own fields (those beyond :class:`SamplerSpec`'s)."""
    shared = SamplerSpec.__dataclass_fields__
    return {k: v for k, v in spec.settings().items() if k not in shared}


def draw_summary(result, spec) -> dict:
    """What ``summary.json`` adds for independent draws: the method's own settings, the mean log-probability of
    the kept draws and of the last epoch's, and what a draw cost (with ``costs``, ``acceptance_length``: the
    positions revealed per sequential round)."""
    out = {
        **own_settings(spec),
        "log_prob_mean": float(result.log_prob[result.kept_epochs].mean()),
        "final_log_prob_mean": float(result.log_prob[-1].mean()),
        "rounds_per_sample": float(result.rounds.double().mean()),
        "calls_per_sample": float(result.calls.double().mean()),
        "forward_rows_per_sample": result.forward_rows / result.rounds.numel(),
    }
    if spec.info.costs:
        rounds = max(float(result.rounds.sum()), 1.0)
        out["acceptance_length"] = float(result.free.sum()) * result.rounds.shape[0] / rounds
    return out


register(Method("mh", MHSpec, _mh, "MH with the MLM's conditionals as proposals"))
register(Method("gibbs", GibbsSpec, _gibbs, "degenerate Gibbs (every proposal accepted)"))
register(
    Method(
        "ancestral",
        AncestralSpec,
        _ancestral,
        "every epoch an exact draw of p_sigma of `mlmprob loglik` along --order (random: a fresh order per "
        "chain and epoch)",
        draws=True,
        rates=None,
        no_accept="ancestral sampling has no accept step",
        summary=draw_summary,
    )
)
register(
    Method(
        "speculative",
        SpeculativeSpec,
        _speculative,
        "the ancestral draws in fewer sequential calls",
        draws=True,
        rates="drafts",
        costs=True,
        summary=draw_summary,
    )
)
for _name, _spec, _kernel, _help in (
    ("unmask", UnmaskSpec, _unmask, "parallel decoding by --score (MaskGIT, LLaDA, Dream; ReMDM remasking)"),
    ("adaptive", AdaptiveSpec, _adaptive, "reveal together only weakly dependent positions"),
):
    register(
        Method(
            _name,
            _spec,
            _kernel,
            _help,
            draws=True,
            rates=None,
            costs=True,
            no_accept=f"{_name} decoding has no accept step",
            summary=draw_summary,
        )
    )
