"""Tiny models whose conditionals are known exactly, the ground truth for tests: ``ExactMLM``'s are the conditional
marginals of an explicit joint over ``V**T`` sequences (*compatible*); ``LookupMLM``'s are seeded random per input
(generally *incompatible*, like a real MLM's)."""

from __future__ import annotations

import itertools

import torch

from ..errors import MLMProbError


class ExactMLM:
    """A masked LM whose conditionals are those of an explicit joint ``p(x_1..x_T)``.

    ``log_joint`` has shape ``[V] * T`` (unnormalised log-probabilities are fine). Token ids are ``0..V-1``;
    ``mask_id`` is ``V``. At every position ``t`` of an input row, ``logits`` returns ``log p(x_t = v | observed
    positions other than t)``, marginalising every masked position: for a masked ``t`` exactly the MLM conditional,
    for an observed ``t`` the conditional with ``t`` treated as masked.

    >>> import torch
    >>> lj = torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]]))
    >>> m = ExactMLM(lj)
    >>> m.vocab_size, m.mask_id
    (2, 2)
    >>> m.logits(torch.tensor([[2, 2]]))[0, 0].exp()   # p(x_1) = (0.3, 0.7)
    tensor([0.3000, 0.7000])
    >>> m.logits(torch.tensor([[2, 1]]))[0, 0].exp()   # p(x_1 | x_2 = 1) = (1/3, 2/3)
    tensor([0.3333, 0.6667])
    """

    def __init__(self, log_joint: torch.Tensor):
        log_joint = torch.as_tensor(log_joint, dtype=torch.float64)
        if log_joint.dim() < 1 or len(set(log_joint.shape)) != 1:
            raise MLMProbError(f"ExactMLM needs a log-joint of shape [V]*T, got {tuple(log_joint.shape)}")
        self.length = log_joint.dim()
        self.vocab_size = log_joint.shape[0]
        self.mask_id = self.vocab_size
        self.log_joint = log_joint - torch.logsumexp(log_joint.flatten(), 0)
        self.max_length = self.length
        self._tables: dict[tuple[frozenset[int], int], torch.Tensor] = {}
        self.calls = 0  # forward passes (rows) served; tests count cost with it

    @classmethod
    def random(
        cls, vocab_size: int, length: int, generator: torch.Generator | None = None, scale: float = 2.0
    ) -> ExactMLM:
        """A joint with i.i.d. Gaussian log-potentials of standard deviation ``scale``."""
        return cls(torch.randn([vocab_size] * length, generator=generator, dtype=torch.float64) * scale)

    def log_prob(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Exact ``log p(x)`` of complete sequences ``[B, T] -> [B]`` (float64)."""
        return self.log_joint[tuple(torch.as_tensor(input_ids).T)]

    def _table(self, masked: frozenset[int], t: int) -> torch.Tensor:
        """log p(x_t | x_O) with O = positions not in masked and != t; axes: O (in order), then t."""
        key = (masked, t)
        tab = self._tables.get(key)
        if tab is None:
            drop = sorted(masked - {t})
            tab = torch.logsumexp(self.log_joint, dim=drop) if drop else self.log_joint
            keep = [i for i in range(self.length) if i not in drop]  # axes of tab, in order
            tab = tab.movedim(keep.index(t), -1)
            tab = tab - torch.logsumexp(tab, dim=-1, keepdim=True)
            self._tables[key] = tab
        return tab

    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        ids = torch.as_tensor(input_ids, dtype=torch.long)
        if ids.dim() != 2 or ids.shape[1] != self.length:
            raise MLMProbError(f"ExactMLM expects input_ids of shape [B, {self.length}], got {tuple(ids.shape)}")
        if ids.min() < 0 or ids.max() > self.mask_id:
            raise MLMProbError(f"ExactMLM token ids must lie in 0..{self.mask_id} (mask), got {ids.min()}..{ids.max()}")
        B, T = ids.shape
        self.calls += B
        out = torch.empty(B, T, self.vocab_size, dtype=torch.float64)
        patterns, inverse = torch.unique(ids == self.mask_id, dim=0, return_inverse=True)
        for p_idx, pattern in enumerate(patterns):
            rows = (inverse == p_idx).nonzero(as_tuple=True)[0]
            masked = frozenset(pattern.nonzero(as_tuple=True)[0].tolist())
            for t in range(T):
                tab = self._table(masked, t)
                obs = [i for i in range(T) if i not in masked and i != t]
                out[rows, t] = tab[tuple(ids[rows, i] for i in obs)] if obs else tab.expand(len(rows), -1)
        return out.float()


class LookupMLM:
    """A masked LM with seeded-random conditionals: a fixed random logit vector per position and full input row (mask
    included), so in general no joint has them all as conditionals. Ids ``0..V-1`` are tokens, ``V`` is the mask."""

    def __init__(self, vocab_size: int, length: int, seed: int = 0, scale: float = 1.5):
        self.vocab_size = vocab_size
        self.length = length
        self.mask_id = vocab_size
        self.max_length = length
        g = torch.Generator().manual_seed(seed)
        self.table = torch.randn((vocab_size + 1) ** length, length, vocab_size, generator=g) * scale
        self._base = (vocab_size + 1) ** torch.arange(length - 1, -1, -1)
        self.calls = 0

    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        ids = torch.as_tensor(input_ids, dtype=torch.long)
        if ids.dim() != 2 or ids.shape[1] != self.length:
            raise MLMProbError(f"LookupMLM expects input_ids of shape [B, {self.length}], got {tuple(ids.shape)}")
        self.calls += ids.shape[0]
        return self.table[(ids * self._base).sum(-1)]


def all_sequences(vocab_size: int, length: int) -> torch.Tensor:
    """Every sequence of ``V**T`` in lexicographic order, ``[V**T, T]``.

    >>> all_sequences(2, 2).tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    """
    return torch.tensor(list(itertools.product(range(vocab_size), repeat=length)), dtype=torch.long)
