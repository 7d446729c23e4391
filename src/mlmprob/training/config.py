"""``TrainConfig``: everything that determines an MLM pretraining run (and so must match on resume)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..errors import MLMProbError

MASKINGS = ("dynamic", "static", "uniform")
#: The most memory a training run may need by :meth:`TrainConfig.check_size`'s estimate: a typo such as
#: ``--hidden 1000000000`` is refused in one line before the model is made.
MAX_TRAIN_BYTES = 64 << 30  # BERT-base on batches of 32 x 512 tokens is about 26 GiB by this estimate
PRECISIONS = ("fp32", "bf16")


@dataclass(frozen=True)
class TrainConfig:
    """Model size, optimisation, masking and bookkeeping of one run.

    ``mask_rate`` is the fraction of maskable tokens selected per sequence: ``k = max(1,
    round(mask_rate * n))`` of its ``n`` tokens (a fixed ``k / T`` on fixed-length synthetic data).
    ``mask_split`` is the (mask, random, keep) share of the selected tokens; the default
    ``(1, 0, 0)`` is pure masking, so the model's conditionals are the MLM conditionals of the
    papers. ``masking="static"`` draws one mask per training sequence once; ``"dynamic"`` draws
    new masks every step; ``"uniform"`` draws new masks every step with a number of masked tokens
    uniform on ``1..n`` per sequence (as masked diffusion models train; ``mask_rate`` then sets only
    the held-out masks). ``precision="bf16"`` runs the forward pass under bfloat16 autocast (fast on
    CPUs with AMX and on GPUs); weights, gradients and the optimiser stay float32. All randomness is a
    function of ``seed`` (and the step), which is what makes resuming exact.

    >>> TrainConfig(hidden_size=16, num_heads=3)
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: hidden_size (16) must be a multiple of num_heads (3)
    """

    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 2
    intermediate_size: int = 128
    dropout: float = 0.0
    max_steps: int = 1000
    batch_size: int = 64
    lr: float = 1e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    mask_rate: float = 0.15
    mask_split: tuple[float, float, float] = (1.0, 0.0, 0.0)
    masking: str = "dynamic"
    seed: int = 0
    eval_every: int = 100
    checkpoint_every: int = 500
    keep_checkpoints: int = 2
    kl_sequences: int = 256  # held-out sequences for the exact KL (synthetic data only); 0 = off
    precision: str = "fp32"  # "bf16": bfloat16 autocast for the forward pass (weights, optimiser stay fp32)

    def __post_init__(self):
        self._check_types()
        object.__setattr__(self, "mask_split", tuple(float(s) for s in self.mask_split))
        for name in (
            "hidden_size",
            "num_layers",
            "num_heads",
            "intermediate_size",
            "max_steps",
            "batch_size",
            "eval_every",
            "checkpoint_every",
            "keep_checkpoints",
        ):
            if int(getattr(self, name)) < 1:
                raise MLMProbError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.hidden_size % self.num_heads:
            raise MLMProbError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads})")
        if not 0.0 < self.mask_rate <= 1.0:
            raise MLMProbError(f"mask_rate must lie in (0, 1], got {self.mask_rate}")
        if len(self.mask_split) != 3 or min(self.mask_split) < 0 or abs(sum(self.mask_split) - 1.0) > 1e-9:
            raise MLMProbError(
                f"mask_split must be three non-negative shares (mask, random, keep) summing to 1, got {self.mask_split}"
            )
        if self.masking not in MASKINGS:
            raise MLMProbError(f"masking must be one of {', '.join(MASKINGS)}, got {self.masking!r}")
        if self.precision not in PRECISIONS:
            raise MLMProbError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.seed < 0:  # the CLI's --seed is non-negative too: one seed, one spelling
            raise MLMProbError(f"seed must be non-negative, got {self.seed}")
        if not 0.0 <= self.dropout < 1.0:
            raise MLMProbError(f"dropout must lie in [0, 1), got {self.dropout}")
        if (
            self.lr <= 0
            or self.warmup_steps < 0
            or self.weight_decay < 0
            or self.grad_clip < 0
            or self.kl_sequences < 0
        ):
            raise MLMProbError("lr must be positive; warmup_steps, weight_decay, grad_clip, kl_sequences non-negative")

    def _check_types(self) -> None:
        """Integers where counts are, finite numbers where rates are: a string or None was Python's comparison
        error, 1.5 layers or ``lr=nan`` (a run of NaN weights) went through."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                raise MLMProbError(f"{f.name} must be an integer, got {type(value).__name__} {value!r}")
            if f.type == "float" and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            ):
                raise MLMProbError(f"{f.name} must be a finite number, got {type(value).__name__} {value!r}")
        split = self.mask_split
        if isinstance(split, (str, bytes)) or not isinstance(split, (tuple, list)) or len(split) != 3:
            raise MLMProbError(f"mask_split must be three shares (mask, random, keep), got {split!r}")
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in split):
            raise MLMProbError(f"mask_split must be three numbers (mask, random, keep), got {split!r}")

    def train_bytes(self, vocab_size: int, length: int) -> int:
        """About how many bytes training needs: float32 weights, gradients and two Adam moments (16 bytes a
        weight), and the activations of one batch (kept for the backward pass: on the high side, 16 hidden-size
        and 2 intermediate-size floats a token and layer, and the logits).

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
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
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
