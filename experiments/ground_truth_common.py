"""What the ground-truth experiment (``ground_truth``) and its report (``ground_truth_report``) share: the
result file name, the method and beam names, the configuration, and the exact quantities of a small
synthetic language (all states, indices, empirical distributions, TV, KL, the Potts statistic, exact
pair joints). Neither the experiment nor the report is imported here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from mlmprob.errors import MLMProbError
from mlmprob.joints.constructions import METHODS
from mlmprob.synthetic import SyntheticLanguage

RESULTS = "results.jsonl"
JOINT_METHODS = METHODS  # every pair-joint construction, in the library's order
BEAMS = (("standard", "l2r"), ("hcb", "l2r"), ("standard", "best"), ("hcb", "best"))


@dataclass(frozen=True)
class GroundTruthConfig:
    """Sizes of every stage. The defaults take about an hour on one CPU core.

    The training fields are the experiment's design, stored in ``config.json`` under these names (a resume
    compares them); :meth:`train_config` turns them into each model's :class:`~mlmprob.training.TrainConfig`
    (the one place they are mapped: a stage trains with its own steps, masking rate and masking)."""

    vocab_size: int = 5
    length: int = 6
    couplings: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0)
    field_scale: float = 0.5
    language_seed: int = 0
    # training (one model per coupling)
    n_train: int = 20000
    n_heldout: int = 1000
    hidden: int = 64
    layers: int = 2
    heads: int = 2
    intermediate: int = 128
    steps: int = 3000
    batch_size: int = 64
    lr: float = 2e-3
    mask_rate: float = 0.34
    eval_every: int = 250
    # evaluation
    n_pairs: int = 200
    n_gaps: int = 200
    gap_lengths: tuple[int, ...] = (2, 3)
    beam_size: int = 5
    chains: int = 1000
    sample_epochs: int = 30
    # training-step curve (coupling ``curve_coupling``) and masking-rate curves
    curve_coupling: float = 2.0
    curve_steps: tuple[int, ...] = (250, 500, 1000, 2000, 3000)
    masking_rates: tuple[float, ...] = (0.17, 0.34, 0.5, 0.67)
    masking_n_train: int = 2000
    masking_steps: int = 3000
    seed: int = 0

    def __post_init__(self):
        if self.vocab_size**self.length > 200_000:
            raise MLMProbError(
                f"V**T = {self.vocab_size**self.length} is too many sequences to enumerate here (limit 200000)"
            )
        if not self.gap_lengths or min(self.gap_lengths) < 1 or max(self.gap_lengths) >= self.length:
            raise MLMProbError(f"gap lengths {self.gap_lengths} must lie in 1..{self.length - 1}")
        for name in ("n_pairs", "n_gaps", "chains", "steps", "masking_steps", "eval_every", "beam_size"):
            if int(getattr(self, name)) < 1:
                raise MLMProbError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.sample_epochs < 2:
            raise MLMProbError(
                f"sample_epochs must be at least 2 (the second half is pooled), got {self.sample_epochs}"
            )
        cs = list(self.curve_steps)
        if not cs or cs != sorted(set(cs)) or cs[0] < 1 or any(c % self.eval_every for c in cs):
            raise MLMProbError(
                f"curve_steps must be increasing positive multiples of eval_every ({self.eval_every}), "
                f"got {self.curve_steps}"
            )

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}

    def train_config(self, *, steps: int, mask_rate: float, masking: str = "dynamic"):
        """The training run of one model of a stage (``steps``, ``mask_rate`` and ``masking`` are the stage's):
        the model's sizes, batch, learning rate, evaluation interval and seed from here, warm-up and checkpoints
        from ``steps``."""
        from mlmprob.training import TrainConfig

        return TrainConfig(
            hidden_size=self.hidden,
            num_layers=self.layers,
            num_heads=self.heads,
            intermediate_size=self.intermediate,
            max_steps=steps,
            batch_size=self.batch_size,
            lr=self.lr,
            warmup_steps=min(100, steps // 10),
            mask_rate=mask_rate,
            masking=masking,
            seed=self.seed,
            eval_every=self.eval_every,
            checkpoint_every=min(500, steps),
            keep_checkpoints=1,
            kl_sequences=256,
        )


# -- exact quantities -----------------------------------------------------------------------------


def all_states(V: int, T: int) -> torch.Tensor:
    """All ``V**T`` sequences ``[V**T, T]`` in base-``V`` order (row ``i`` is ``i`` in base ``V``)."""
    from mlmprob.models.exact import all_sequences

    return all_sequences(V, T)


def state_index(x: torch.Tensor, V: int) -> torch.Tensor:
    """Base-``V`` index of each row of ``x`` ``[..., T]`` (inverse of ``all_states``).

    >>> state_index(all_states(3, 2), 3).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7, 8]
    """
    T = x.shape[-1]
    w = V ** torch.arange(T - 1, -1, -1)
    return (x.long() * w).sum(-1)


def empirical(idx: torch.Tensor, n_states: int) -> torch.Tensor:
    """Empirical distribution (float64) of state indices."""
    return torch.bincount(idx.reshape(-1), minlength=n_states).double() / idx.numel()


def tv(p: torch.Tensor, q: torch.Tensor) -> float:
    """Total variation distance of two distributions on the same states.

    >>> tv(torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0]))
    0.5
    """
    return 0.5 * float((p - q).abs().sum())


def kl(logp: torch.Tensor, logq: torch.Tensor) -> float:
    """KL(p || q) from log-probabilities (0 log 0 = 0)."""
    p = logp.exp()
    return float(torch.where(p > 0, p * (logp - logq), torch.zeros_like(p)).sum())


def adjacent_equal(x: torch.Tensor) -> torch.Tensor:
    """The Potts sufficient statistic for the coupling: equal adjacent pairs per row ``[..., T] -> [...]``."""
    return (x[..., 1:] == x[..., :-1]).sum(-1)


def true_pair_joint(lang: SyntheticLanguage, x: torch.Tensor, a: int, b: int) -> torch.Tensor:
    """Exact ``log p(x_a, x_b | rest)`` ``[V, V]`` for one sequence ``x`` ``[T]`` (symbols)."""
    V = lang.vocab_size
    rows = x.repeat(V * V, 1)
    rows[:, a] = torch.arange(V).repeat_interleave(V)
    rows[:, b] = torch.arange(V).repeat(V)
    both = x.clone()[None]
    both[0, a] = both[0, b] = lang.mask_id
    return (lang.log_marginal(rows) - lang.log_marginal(both)).reshape(V, V)


# -- records of results.jsonl, for the report and its plots ----------------------------------------


def by_stage(recs: list[dict], stage: str, prefix: str) -> list[dict]:
    """The records of ``stage`` whose unit starts with ``prefix``."""
    return [r for r in recs if r.get("stage") == stage and r["unit"].startswith(prefix)]


def model_of(r: dict) -> str:
    """The model unit a record belongs to: ``masking/r0.5-static/pairs`` -> ``masking/r0.5-static``."""
    return r["unit"].rsplit("/", 1)[0]


def per_model(recs: list[dict], stage: str, prefix: str, k: int | None = None) -> dict[str, dict]:
    """Records of one stage keyed by their model unit (infill: only gaps of length ``k``)."""
    return {model_of(r): r for r in by_stage(recs, stage, prefix) if k is None or r["k"] == k}
