"""Per-step terms subtracted from ``log q(w_j | input)``, what separates the methods: ``Standard`` (eq. 1), ``Pivot``
(HCB, eq. 6) and the two ablations. ``fill_id``: what the unfilled gap positions hold (``None``: the mask)."""

from __future__ import annotations

from collections import deque

import torch


class Standard:
    """No correction: ``score = sum_j log q(w_j | w_<j, mask at the rest)``.

    >>> Standard()(torch.zeros(2, 3)).tolist()
    [0.0, 0.0]
    """

    fill_id: int | None = None

    def __call__(self, logp: torch.Tensor) -> torch.Tensor:
        return torch.zeros(logp.shape[0], dtype=logp.dtype)


class Pivot:
    """HCB correction with pivot token ``pivot`` at every gap position: term ``log q(pivot | input)``.

    ``mask_id``: the model's mask id; when ``pivot == mask_id`` the unfilled positions keep the mask.

    >>> p = Pivot(2, mask_id=2)
    >>> p.fill_id is None, p(torch.tensor([[-1.0, -2.0, -3.0]])).tolist()
    (True, [-3.0])
    """

    def __init__(self, pivot: int, mask_id: int):
        self.pivot = int(pivot)
        self.fill_id = None if self.pivot == mask_id else self.pivot

    def __call__(self, logp: torch.Tensor) -> torch.Tensor:
        return logp[:, self.pivot]


class ContextScramble:
    """Ablation 1: the HCB mask term taken from a random earlier context.

    Keeps the last ``capacity`` true terms ``log q(mask | input)`` across calls (share one object
    across the gaps of an experiment); each step's terms are drawn uniformly from the memory before
    this step's true terms join it (from this step's own terms when the memory is still empty).

    >>> c = ContextScramble(mask_id=1, generator=torch.Generator().manual_seed(0))
    >>> c(torch.tensor([[0.0, -5.0]])).tolist()   # empty memory: its own term
    [-5.0]
    >>> c(torch.tensor([[0.0, -1.0]])).tolist()   # now the earlier term
    [-5.0]
    """

    fill_id: int | None = None

    def __init__(self, mask_id: int, generator: torch.Generator, capacity: int = 1000):
        self.mask_id = mask_id
        self.generator = generator
        self.memory: deque[float] = deque(maxlen=capacity)

    def __call__(self, logp: torch.Tensor) -> torch.Tensor:
        true = logp[:, self.mask_id]
        pool = torch.tensor(list(self.memory), dtype=logp.dtype) if self.memory else true
        idx = torch.randint(len(pool), (logp.shape[0],), generator=self.generator)
        self.memory.extend(true.tolist())
        return pool[idx]


class RandomTokenSwap:
    """Ablation 2: the HCB term read at a uniformly random output token ``r != mask`` per row.

    >>> s = RandomTokenSwap(mask_id=0, vocab_size=3, generator=torch.Generator().manual_seed(0))
    >>> float(s(torch.tensor([[9.0, 1.0, 1.0]]))[0])
    1.0
    """

    fill_id: int | None = None

    def __init__(self, mask_id: int, vocab_size: int, generator: torch.Generator):
        self.choices = torch.tensor([i for i in range(vocab_size) if i != mask_id], dtype=torch.long)
        self.generator = generator

    def __call__(self, logp: torch.Tensor) -> torch.Tensor:
        r = self.choices[torch.randint(len(self.choices), (logp.shape[0],), generator=self.generator)]
        return logp.gather(1, r[:, None])[:, 0]
