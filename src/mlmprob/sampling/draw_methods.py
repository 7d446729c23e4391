"""The methods whose every epoch is an independent draw from all-masked (ancestral, speculative, unmask, adaptive,
mask-predict): their specs, kernel factories, ``summary.json`` additions and registry entries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..argtypes import nonnegative_float, nonnegative_int, positive_int
from ..errors import MLMProbError
from .options import (
    DEFAULT_DRAFT_K,
    DEFAULT_ITERATIONS,
    DEFAULT_STEPS,
    DEFAULT_THRESHOLD,
    ORDERS,
    SCHEDULES,
    SCORES,
    STRATEGIES,
    check_adaptive,
    check_iterations,
    check_positive_int,
    check_unmasking,
)
from .registry import Method, ProposalSpec, SamplerSpec, kernel_of, option, order_json, register, shared_field

if TYPE_CHECKING:
    from ..likelihood.orders import OrderSpec


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
class OrderedDrawSpec(DrawSpec, ProposalSpec):
    """The draws along an ``order``, ``count`` (the name of a field: a positive integer) positions at a time."""

    count: ClassVar[str] = "tokens_per_step"
    order: OrderSpec = option(
        "random",
        "the order positions are revealed in (random: a fresh order per chain and epoch)",
        choices=ORDERS,
        json=order_json,
    )

    def __post_init__(self):
        super().__post_init__()
        # explicit orders are a list per sequence; None was torch's 'Could not infer dtype'
        if self.order is None or isinstance(self.order, str) and self.order not in ORDERS:
            raise MLMProbError(f"order must be one of {ORDERS} or explicit orders, got {self.order!r}")
        check_positive_int(getattr(self, self.count), self.count)


@dataclass(frozen=True)
class AncestralSpec(OrderedDrawSpec):
    """Exact draws of the chain-rule distribution ``p_sigma`` along ``order``, ``tokens_per_step`` at a time."""

    method: str = shared_field("method", "ancestral")
    tokens_per_step: int = option(
        1,
        "positions revealed per step, each from its conditional given the same context (parallel decoding: "
        "approximate for K > 1)",
        type=positive_int,
    )


@dataclass(frozen=True)
class SpeculativeSpec(OrderedDrawSpec):
    """The ancestral draws in fewer sequential calls: ``draft_k`` positions drafted per round."""

    method: str = shared_field("method", "speculative")
    count = "draft_k"
    draft_k: int = option(
        DEFAULT_DRAFT_K,
        "positions drafted per round from one pass and verified in one batch (at most the free positions are "
        "drafted); the draws stay exact",
        type=positive_int,
    )


@dataclass(frozen=True)
class DecoderSpec(DrawSpec, ProposalSpec):
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


@dataclass(frozen=True)
class UnmaskSpec(DecoderSpec):
    """Unmasking by ``score`` in ``steps`` steps (MaskGIT, LLaDA, Dream), blocks and ReMDM remasking."""

    method: str = shared_field("method", "unmask")
    score: str = shared_field("score", "confidence", DecoderSpec)
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

    method: str = shared_field("method", "adaptive")
    score: str = shared_field("score", "margin", DecoderSpec)
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


@dataclass(frozen=True)
class MaskPredictSpec(DrawSpec):
    """Mask-predict (Ghazvininejad et al. 2019; ``easy_first``: Kasai et al. 2020): greedy refinement of every free
    position in ``iterations`` rounds, no proposal and no randomness (every epoch the same fill)."""

    method: str = shared_field("method", "mask-predict")
    iterations: int = option(
        DEFAULT_ITERATIONS,
        "rounds of greedy refinement (the first fills every free position by its arg-max, each later one "
        "re-predicts the least confident; one sequential call each)",
        type=positive_int,
    )
    strategy: str = option(
        "mask_predict",
        "which positions a round re-predicts: the least confident, fewer each round (mask_predict), or every "
        "one given the more confident (easy_first)",
        choices=STRATEGIES,
    )

    def __post_init__(self):
        super().__post_init__()
        check_iterations(self.iterations)
        if self.strategy not in STRATEGIES:
            raise MLMProbError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")


def draw_summary(result, spec) -> dict:
    """What ``summary.json`` adds for independent draws: the method's own settings, the mean log-probability of
    the kept draws and of the last epoch's, and what a draw cost (with ``costs``, ``acceptance_length``: the
    positions revealed per sequential round)."""
    shared = ProposalSpec.__dataclass_fields__  # SamplerSpec's and the proposal's
    out = {
        **{k: v for k, v in spec.settings().items() if k not in shared},
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


# in the order of --method's choices after mh and gibbs
for _name, _spec, _kernel, _help, _reports in (
    (
        "ancestral",
        AncestralSpec,
        kernel_of(".ancestral", "Ancestral"),
        "every epoch an exact draw of p_sigma of `mlmprob loglik` along --order (random: a fresh order per "
        "chain and epoch)",
        dict(rates=None, no_accept="ancestral sampling has no accept step"),
    ),
    (
        "speculative",
        SpeculativeSpec,
        kernel_of(".speculative", "Speculative"),
        "the ancestral draws in fewer sequential calls",
        dict(rates="drafts"),
    ),
    (
        "unmask",
        UnmaskSpec,
        kernel_of(".unmasking", "Unmasking"),
        "parallel decoding by --score (MaskGIT, LLaDA, Dream; ReMDM remasking)",
        dict(rates=None, no_accept="unmask decoding has no accept step"),
    ),
    (
        "adaptive",
        AdaptiveSpec,
        kernel_of(".adaptive", "Adaptive"),
        "reveal together only weakly dependent positions",
        dict(rates=None, no_accept="adaptive decoding has no accept step"),
    ),
    (
        "mask-predict",
        MaskPredictSpec,
        kernel_of(".maskpredict", "MaskPredict"),
        "greedy refinement in --iterations rounds (Ghazvininejad et al. 2019; a deterministic baseline)",
        dict(rates=None, no_accept="mask-predict is greedy: no accept step"),
    ),
):
    _costs = _name != "ancestral"  # every draw but ancestral's reports what it cost
    register(Method(_name, _spec, _kernel, _help, draws=True, costs=_costs, summary=draw_summary, **_reports))
