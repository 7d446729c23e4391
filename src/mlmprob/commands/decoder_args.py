"""The options of ``mlmprob sample --method unmask | adaptive`` (the parallel decoders of
``mlmprob.sampling.unmasking`` and ``mlmprob.sampling.adaptive``): their flags, the one-line refusals of flags
that do not apply, and what their run's ``summary.json`` adds.

Every flag is named after its ``SamplerSpec`` field (``--block-length`` -> ``block_length``), which picks it up
by name; the defaults are the spec's, so a flag left out changes nothing."""

from __future__ import annotations

from ..argtypes import nonnegative_float, nonnegative_int, positive_int
from ..errors import MLMProbError
from ..sampling.options import SCHEDULES, SCORES
from ..sampling.spec import DECODERS, SamplerSpec

# flag -> (spec field, the methods that take it)
FLAGS = {
    "--score": ("score", DECODERS),
    "--steps": ("steps", ("unmask",)),
    "--schedule": ("schedule", ("unmask",)),
    "--block-length": ("block_length", ("unmask",)),
    "--remask": ("remask", ("unmask",)),
    "--remask-steps": ("remask_steps", ("unmask",)),
    "--threshold": ("threshold", ("adaptive",)),
    "--max-tokens": ("max_tokens", ("adaptive",)),
    "--pair-top-k": ("pair_top_k", ("adaptive",)),
}
# options of the other methods, with their defaults: refused with a decoder
OTHERS = {
    "--block-size": ("block_size", 1),
    "--target-temperature": ("target_temperature", 1.0),
    "--anneal": ("anneal", 0.0),
    "--temperature-floor": ("temperature_floor", 0.05),
    "--init": ("init", "given"),
    "--order": ("order", "random"),
    "--tokens-per-step": ("tokens_per_step", 1),
    "--draft-k": ("draft_k", None),
}


def _default(name: str):
    return SamplerSpec.__dataclass_fields__[name].default


def add_decoder_args(group) -> None:
    """The decoders' flags, in the ``sampler`` group of ``mlmprob sample``."""
    group.add_argument(
        "--score",
        choices=SCORES,
        default=None,
        help="unmask, adaptive: which masked positions are revealed first: the probability of the drawn "
        "candidate (confidence; MaskGIT, LLaDA), top-1 minus top-2 probability (margin) or minus "
        "the entropy (entropy; Dream). Default: confidence (unmask), margin (adaptive)",
    )
    group.add_argument(
        "--steps",
        type=positive_int,
        default=_default("steps"),
        help="unmask: model calls that reveal the free positions (each step one pass)",
    )
    group.add_argument(
        "--schedule",
        choices=SCHEDULES,
        default=_default("schedule"),
        help="unmask: positions revealed per step: linear (equal shares) or cosine (MaskGIT)",
    )
    group.add_argument(
        "--block-length",
        type=positive_int,
        default=None,
        help="unmask: decode the free positions in left-to-right blocks of this many (LLaDA's "
        "semi-autoregressive decoding), the steps shared among the blocks",
    )
    group.add_argument(
        "--remask",
        type=nonnegative_float,
        default=_default("remask"),
        help="unmask: after the steps, each --remask-steps step masks every free position again with "
        "this probability and redraws them from one pass (ReMDM, its loop variant)",
    )
    group.add_argument(
        "--remask-steps",
        type=nonnegative_int,
        default=_default("remask_steps"),
        help="unmask: remasking steps after the unmasking steps (needs --remask > 0; at most 10,000)",
    )
    group.add_argument(
        "--threshold",
        type=nonnegative_float,
        default=_default("threshold"),
        help="adaptive: reveal together only positions whose measured pair dependence (expected KL, "
        "nats) is below this; 0: one position per step",
    )
    group.add_argument(
        "--max-tokens", type=positive_int, default=None, help="adaptive: at most this many positions per step"
    )
    group.add_argument(
        "--pair-top-k",
        type=positive_int,
        default=None,
        help="adaptive: measure the dependence on each position's K most probable values only "
        "(default: all; fewer rows, one more sequential call per step)",
    )


def check_decoder_options(args) -> None:
    """One-line errors: a decoder's flag with another method, and with a decoder the other methods' flags."""
    for flag, (name, methods) in FLAGS.items():
        if args.method not in methods and getattr(args, name) != _default(name):
            raise MLMProbError(f"{flag} is for --method {' or '.join(methods)} (got --method {args.method})")
    if args.method in DECODERS:
        for flag, (name, default) in OTHERS.items():
            if getattr(args, name, default) != default:
                raise MLMProbError(
                    f"{flag} does not apply to --method {args.method} (every epoch is one draw from "
                    "all-masked, in the order its scores choose); leave it out"
                )


def decoder_summary(result, spec: SamplerSpec) -> dict:
    """What ``summary.json`` adds for a decoder's run: its settings, the mean log-probability of the kept draws
    and of the last epoch's (the product of the conditionals each draw used), and what a draw cost
    (``acceptance_length``: positions revealed per step, as for speculative rounds)."""
    draws = result.rounds.numel()
    note = f"{result.method} decoding has no accept step"
    return {
        **spec.settings(),
        "accept_rate": None,
        "novel_rate": None,
        "accept_rate_note": note,
        "novel_rate_note": note,
        "log_prob_mean": float(result.log_prob[result.kept_epochs].mean()),
        "final_log_prob_mean": float(result.log_prob[-1].mean()),
        "rounds_per_sample": float(result.rounds.double().mean()),
        "calls_per_sample": float(result.calls.double().mean()),
        "forward_rows_per_sample": result.forward_rows / draws,
        "acceptance_length": float(result.free.sum()) * result.rounds.shape[0] / max(float(result.rounds.sum()), 1.0),
    }
