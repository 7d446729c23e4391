"""``TrainConfig``: everything that determines an MLM pretraining run (and so must match on resume); ``mlmprob
train``'s flags are made from its fields, each flag's type running the field's own check."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..argtypes import LIMIT, checked
from ..errors import MLMProbError
from ..fields import option
from ..settings import check_choice, check_seed

MASKINGS = ("dynamic", "static", "uniform")
#: The most memory a run may need by :meth:`TrainConfig.check_size`'s estimate (a typo refused before any model).
MAX_TRAIN_BYTES = 64 << 30  # BERT-base on batches of 32 x 512 tokens is about 26 GiB by this estimate
PRECISIONS = ("fp32", "bf16")


def _within(what: str, ok):
    """A field's range check (``check(value, name)``): ``ok(value)``, else one line saying ``what`` it must be."""

    def check(value, name: str = "value") -> None:
        if not ok(value):
            raise MLMProbError(f"{name} must be {what}, got {value!r}")

    return check


def _checked(parse, check) -> dict:
    """The metadata of a field checked by ``check``: ``TrainConfig`` runs it, and so does its flag's type."""
    return {"type": checked(parse, check), "check": check}


_COUNT = _checked(int, _within(f"a positive integer no larger than {LIMIT:,}", lambda v: 1 <= v <= LIMIT))
_STEPS = _checked(int, _within(f"a non-negative integer no larger than {LIMIT:,}", lambda v: 0 <= v <= LIMIT))
_RATE = _checked(float, _within(f"a positive number no larger than {LIMIT:g}", lambda v: 0 < v <= LIMIT))
_SCALE = _checked(float, _within(f"a non-negative number no larger than {LIMIT:g}", lambda v: 0 <= v <= LIMIT))
_PROB = _checked(float, _within("a probability in (0, 1]", lambda v: 0 < v <= 1))


def parse_mask_split(text: str) -> tuple[float, ...]:
    """``--mask-split``'s text, ``mask,random,keep``, as three numbers (:func:`check_mask_split` checks them)."""
    try:
        parts = tuple(float(s) for s in text.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 3:
        raise MLMProbError(f"mask_split must be three comma-separated numbers (mask,random,keep), got {text!r}")
    return parts


def check_mask_split(split, name: str = "mask_split") -> None:
    if not (len(split) == 3 and all(s >= 0 for s in split) and abs(sum(split) - 1.0) <= 1e-9):  # NaN: refused
        raise MLMProbError(f"{name} must be three non-negative shares (mask, random, keep) summing to 1, got {split}")


_SPLIT = _checked(parse_mask_split, check_mask_split)


@dataclass(frozen=True)
class TrainConfig:
    """Model size, optimisation, masking and bookkeeping of one run.

    ``mask_rate`` is the fraction of maskable tokens selected per sequence: ``k = max(1, round(mask_rate * n))`` of its
    ``n`` tokens (a fixed ``k / T`` on fixed-length synthetic data). ``mask_split`` is the (mask, random, keep) share of
    the selected tokens; the default ``(1, 0, 0)`` is pure masking, so the model's conditionals are the MLM conditionals
    of the papers. ``masking="static"`` draws one mask per training sequence once; ``"dynamic"`` draws new masks every
    step; ``"uniform"`` draws new masks every step with a number of masked tokens uniform on ``1..n`` per sequence (as
    masked diffusion models train; ``mask_rate`` then sets only the held-out masks). ``precision="bf16"`` runs the
    forward pass under bfloat16 autocast (fast on CPUs with AMX and on GPUs); weights, gradients and the optimiser stay
    float32. All randomness is a function of ``seed`` (and the step), which is what makes resuming exact.

    >>> TrainConfig(hidden_size=16, num_heads=3)
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: hidden_size (16) must be a multiple of num_heads (3)
    """

    hidden_size: int = option(64, "hidden size", flag="--hidden", **_COUNT)
    num_layers: int = option(2, "transformer layers", flag="--layers", **_COUNT)
    num_heads: int = option(2, "attention heads", flag="--heads", **_COUNT)
    intermediate_size: int = option(128, "feed-forward size", flag="--intermediate", **_COUNT)
    dropout: float = option(0.0, "dropout rate", **_checked(float, _within("a rate in [0, 1)", lambda v: 0 <= v < 1)))
    max_steps: int = option(1000, "optimiser steps in total", flag="--steps", **_COUNT)
    batch_size: int = option(64, "sequences per step", **_COUNT)
    lr: float = option(1e-3, "peak learning rate (AdamW)", **_RATE)
    warmup_steps: int = option(100, "linear warm-up steps", flag="--warmup", **_STEPS)
    weight_decay: float = option(0.01, "AdamW weight decay", **_SCALE)
    grad_clip: float = option(1.0, "gradient-norm clip (0 = off)", **_SCALE)
    mask_rate: float = option(0.15, "fraction of tokens selected per sequence (>= 1)", **_PROB)
    mask_split: tuple[float, float, float] = option(
        (1.0, 0.0, 0.0), "mask,random,keep shares of the selected tokens", shown="1,0,0", **_SPLIT
    )
    masking: str = option(
        "dynamic",
        "dynamic: new masks every step; static: one fixed mask per sequence; uniform: new masks, a number uniform "
        "on 1..n per sequence",
        choices=MASKINGS,
    )
    seed: int = option(0, "init, data order, masks, dropout, data sampling", **_checked(int, check_seed))
    eval_every: int = option(100, "steps between held-out evaluations", **_COUNT)
    checkpoint_every: int = option(500, "steps between checkpoints", **_COUNT)
    keep_checkpoints: int = option(2, "checkpoints kept on disk", **_COUNT)
    kl_sequences: int = option(256, "held-out sequences for the exact KL (synthetic)", **_STEPS)  # 0: off
    precision: str = option(  # weights, gradients and the optimiser stay fp32
        "fp32", "bf16: bfloat16 autocast in the training forward pass (fast on AMX CPUs and GPUs)", choices=PRECISIONS
    )

    def __post_init__(self):
        self._check_types()
        object.__setattr__(self, "mask_split", tuple(float(s) for s in self.mask_split))
        for f in fields(self):  # each field's own check, the one its flag runs
            if "check" in f.metadata:
                f.metadata["check"](getattr(self, f.name), f.name)
            elif "choices" in f.metadata:
                check_choice(f.name, getattr(self, f.name), f.metadata["choices"])
        if self.hidden_size % self.num_heads:
            raise MLMProbError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads})")

    def _check_types(self) -> None:
        """Integers where counts are, finite numbers where rates are (before the range checks compare them)."""
        for f in fields(self):
            value = getattr(self, f.name)
            plain = not isinstance(value, bool)
            if f.type == "int" and not (plain and isinstance(value, int)):
                raise MLMProbError(f"{f.name} must be an integer, got {type(value).__name__} {value!r}")
            if f.type == "float" and not (plain and isinstance(value, (int, float)) and math.isfinite(value)):
                raise MLMProbError(f"{f.name} must be a finite number, got {type(value).__name__} {value!r}")
        split = self.mask_split
        if isinstance(split, (str, bytes)) or not isinstance(split, (tuple, list)) or len(split) != 3:
            raise MLMProbError(f"mask_split must be three shares (mask, random, keep), got {split!r}")
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in split):
            raise MLMProbError(f"mask_split must be three numbers (mask, random, keep), got {split!r}")

    def train_bytes(self, vocab_size: int, length: int) -> int:
        """About how many bytes training needs: 16 a weight (float32 weights, gradients, two Adam moments) and one
        batch's activations (on the high side: 16 hidden-size and 2 intermediate-size floats a token and layer, and
        the logits).

        >>> TrainConfig().train_bytes(25, 14) < 50 << 20
        True
        """
        h, i, n = self.hidden_size, self.intermediate_size, self.num_layers
        weights = 2 * vocab_size * h + length * h + n * (4 * h * h + 2 * h * i)
        activations = self.batch_size * length * (n * (16 * h + 2 * i + 2 * self.num_heads * length) + vocab_size)
        return 16 * weights + 4 * activations

    def check_size(self, vocab_size: int, length: int) -> None:
        """Refuse a run whose model and batch would not fit :data:`MAX_TRAIN_BYTES` (before any is made).

        >>> TrainConfig(hidden_size=10**6, num_heads=1).check_size(25, 14)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: a model of hidden size 1,000,000, 2 layers, intermediate size 128 and 25 ...
        """
        need = self.train_bytes(vocab_size, length)
        if need > MAX_TRAIN_BYTES:
            raise MLMProbError(
                f"a model of hidden size {self.hidden_size:,}, {self.num_layers:,} layers, intermediate size "
                f"{self.intermediate_size:,} and {vocab_size:,} tokens, trained on batches of {self.batch_size:,} x "
                f"{length:,} tokens, would need about {need / (1 << 30):,.0f} GiB, more than the "
                f"{MAX_TRAIN_BYTES >> 30} GiB a run may: make it smaller"
            )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["mask_split"] = list(self.mask_split)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        if unknown := set(d) - {f.name for f in fields(cls)}:
            raise MLMProbError(f"unknown TrainConfig fields: {', '.join(sorted(unknown))}")
        values: dict[str, Any] = {k: (tuple(v) if k == "mask_split" else v) for k, v in d.items()}
        return cls(**values)

    def lr_at(self, step: int) -> float:
        """Linear warmup over ``warmup_steps``, then linear decay to 0 at ``max_steps`` (step is 0-based).

        >>> c = TrainConfig(lr=1.0, warmup_steps=2, max_steps=6)
        >>> [round(c.lr_at(s), 2) for s in range(6)]
        [0.5, 1.0, 1.0, 0.75, 0.5, 0.25]
        """
        if step < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        rest = max(self.max_steps - self.warmup_steps, 1)
        return self.lr * max(0.0, 1.0 - (step - self.warmup_steps) / rest)
