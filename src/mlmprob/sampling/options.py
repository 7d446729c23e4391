"""The samplers' settings that need no tensors (choices, defaults, bounds, checks, :class:`ProposalConfig`), so that
building a spec or a parser imports no torch.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from ..errors import MLMProbError
from ..settings import check_count, check_int

INITS = ("given", "greedy", "random")
ORDERS = ("random", "l2r", "r2l")  # the named orders (MCMC sweeps take the first two)
SCORES = ("confidence", "margin", "entropy")
SCHEDULES = ("linear", "cosine")
STRATEGIES = ("mask_predict", "easy_first")  # mask-predict's re-masking rules
DEFAULT_ITERATIONS = 10
DEFAULT_STEPS = 8
DEFAULT_THRESHOLD = 0.05
DEFAULT_DRAFT_K = 4
#: The most remasking steps a draw may take: each is one sequential model call per chain, so the cap bounds a
#: draw's work at ``steps + MAX_REMASK_STEPS`` calls whatever number was typed.
MAX_REMASK_STEPS = 10_000
#: The most mask-predict rounds a draw may take: each is one sequential model call per chain and one more copy of
#: the ids kept in the draw's history, so the cap bounds both whatever number was typed.
MAX_ITERATIONS = 10_000


@dataclass(frozen=True)
class ProposalConfig:
    """How an MLM conditional is modified before proposing from it: ``temperature`` divides the logits (0: greedy),
    ``top_p`` keeps the nucleus (:mod:`mlmprob.sampling.proposals` states the rule).
    """

    temperature: float = 1.0
    top_p: float = 1.0

    def __post_init__(self):
        for name, value in (("proposal_temperature", self.temperature), ("top_p", self.top_p)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):  # a str, None: not torch's message
                raise MLMProbError(f"{name} must be a number, got {type(value).__name__} {value!r}")
        if not (self.temperature >= 0.0) or self.temperature == float("inf"):
            raise MLMProbError(f"proposal_temperature must be a finite number >= 0, got {self.temperature}")
        if not (0.0 < self.top_p <= 1.0):
            raise MLMProbError(f"top_p must lie in (0, 1], got {self.top_p}")


def check_positive_int(value, name: str, allow_none: bool = False):
    if value is not None or not allow_none:
        check_int(name, value, 1, "a positive integer")


def check_iterations(iterations) -> int:
    """Mask-predict's rounds: a positive integer of at most :data:`MAX_ITERATIONS` (the spec's and
    :func:`~mlmprob.sampling.maskpredict.mask_predict`'s one check)."""
    return check_count("iterations", iterations, MAX_ITERATIONS, "each is a model call per chain")


def check_unmasking(score, steps, schedule, block_length, remask, remask_steps) -> None:
    """One-line errors for bad ``Unmasking`` settings (also checked where a sampler spec is made)."""
    if score not in SCORES:
        raise MLMProbError(f"score must be one of {SCORES}, got {score!r}")
    if schedule not in SCHEDULES:
        raise MLMProbError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    check_positive_int(steps, "steps")
    check_positive_int(block_length, "block_length", allow_none=True)
    check_int("remask_steps", remask_steps, 0, "a non-negative integer")
    if isinstance(remask, bool) or not isinstance(remask, (int, float)) or not 0.0 <= remask <= 1.0:
        raise MLMProbError(f"remask must be a probability in [0, 1], got {remask!r}")
    if remask_steps > MAX_REMASK_STEPS:
        raise MLMProbError(
            f"remask_steps must be at most {MAX_REMASK_STEPS:,} (each is a model call per chain), got {remask_steps!r}"
        )
    if remask_steps and remask == 0:
        raise MLMProbError(
            f"remask_steps ({remask_steps}) needs remask > 0: with remask 0 a remasking step masks "
            "nothing and changes nothing; give --remask P or leave --remask-steps out"
        )


def check_adaptive(score, threshold, max_tokens, pair_top_k) -> None:
    """One-line errors for bad ``Adaptive`` settings (also checked where a sampler spec is made)."""
    if score not in SCORES:
        raise MLMProbError(f"score must be one of {SCORES}, got {score!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not threshold >= 0:
        raise MLMProbError(f"threshold must be a number >= 0, got {threshold!r}")
    check_positive_int(max_tokens, "max_tokens", allow_none=True)
    check_positive_int(pair_top_k, "pair_top_k", allow_none=True)


#: The most sites one MH move may change (the design kernel's bound).
MAX_SITES = 1000


def check_moves(informed, sites, block_size, proposal: ProposalConfig, order, delayed=False) -> None:
    """One-line errors for MH's moves (:mod:`~mlmprob.mcmc.moves`): ``informed`` and ``delayed`` bools, ``sites`` a
    positive integer; ``delayed`` only with moves (a one-site move drawn from its own row passes a first stage read
    from that row always: it would screen nothing). Moves that are informed or change more than one site choose their
    own sites from the cached rows and are exact as written there: with ``block_size`` 1 (a number or a schedule;
    blocks are the other multi-site proposal), random ``order``, and an untruncated, tempered proposal (``top_p`` 1,
    temperature > 0).

    >>> check_moves(True, 1, 2, ProposalConfig(), "random")
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: informed=True: the moves choose their own sites, so block_size must be 1, got 2
    """
    from .schedules import Constant

    for name, value in (("informed", informed), ("delayed", delayed)):
        if not isinstance(value, bool):
            raise MLMProbError(f"{name} must be True or False, got {value!r}")
    check_count("sites", sites, MAX_SITES, "residues one move may change")
    if not informed and sites == 1:
        if delayed:
            raise MLMProbError("delayed=True screens moves: give it with informed=True or sites > 1")
        return
    what = ", ".join(["informed=True"] * informed + [f"sites={sites}"] * (sites > 1)) + ": the moves"
    one = block_size == 1 if not callable(block_size) else isinstance(block_size, Constant) and block_size.value == 1
    if not one:
        shown = getattr(block_size, "value", block_size)
        raise MLMProbError(f"{what} choose their own sites, so block_size must be 1, got {shown!r}")
    if order != "random":
        raise MLMProbError(f"{what} choose their own sites, so order must be 'random', got {order!r}")
    if proposal.top_p < 1.0:
        raise MLMProbError(
            f"{what} need the whole proposal (a nucleus can make the reverse move impossible), "
            f"so top_p must be 1, got {proposal.top_p!r}"
        )
    if proposal.temperature == 0.0:
        raise MLMProbError(f"{what} draw from the tempered rows, so proposal_temperature must be > 0, got 0")
