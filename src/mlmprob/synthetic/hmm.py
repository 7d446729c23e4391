"""A hidden Markov model over fixed-length sequences, with random parameters for experiments."""

from __future__ import annotations

import numpy as np
import torch

from ..errors import MLMProbError
from .chain import ChainLanguage


def _check_size(vocab_size: int, length: int) -> None:
    if vocab_size < 2:
        raise MLMProbError(f"vocab_size must be at least 2, got {vocab_size}")
    if length < 1:
        raise MLMProbError(f"length must be at least 1, got {length}")


class HMM(ChainLanguage):
    """``p(x) = sum_z pi(z_1) prod_t A(z_t, z_{t+1}) prod_t B(z_t, x_t)`` with ``S`` hidden states.

    Exact conditionals for any mask pattern by forward-backward (``ChainLanguage``).

    >>> import torch
    >>> hmm = HMM.random(vocab_size=4, n_states=3, length=5, generator=torch.Generator().manual_seed(0))
    >>> x = hmm.sample(2, torch.Generator().manual_seed(1))
    >>> x.shape, hmm.log_prob(x).shape
    (torch.Size([2, 5]), torch.Size([2]))
    >>> round(float(hmm.log_joint().exp().sum()), 12)   # V**T sequences sum to one
    1.0
    """

    concentration: float | None  # the Dirichlet concentration it was drawn with (random()), when known
    KIND = "hmm"
    SPEC = ("vocab_size", "length", "n_states", "concentration")

    def __init__(self, initial: torch.Tensor, transition: torch.Tensor, emission: torch.Tensor, length: int):
        initial, transition, emission = (
            torch.as_tensor(a, dtype=torch.float64) for a in (initial, transition, emission)
        )
        S = initial.shape[0]
        if initial.dim() != 1 or tuple(transition.shape) != (S, S) or emission.dim() != 2 or emission.shape[0] != S:
            raise MLMProbError(
                f"HMM needs initial [S], transition [S, S], emission [S, V]; got {tuple(initial.shape)}, "
                f"{tuple(transition.shape)}, {tuple(emission.shape)}"
            )
        _check_size(emission.shape[1], length)
        for name, p in (("initial", initial), ("transition", transition), ("emission", emission)):
            if (p < 0).any() or not torch.allclose(p.sum(-1), torch.ones(()).double(), atol=1e-9):
                raise MLMProbError(f"HMM {name} probabilities must be non-negative and sum to one along the last axis")
        self.initial, self.transition, self.hmm_emission = initial, transition, emission
        unary = torch.zeros(length, S, dtype=torch.float64)
        unary[0] = initial.log()
        super().__init__(unary, transition.log(), emission.log())

    @classmethod
    def random(
        cls,
        vocab_size: int,
        n_states: int,
        length: int,
        generator: torch.Generator | None = None,
        concentration: float = 0.5,
    ) -> HMM:
        """Initial, transition and emission rows drawn from a symmetric Dirichlet(``concentration``).

        A small concentration (< 1) gives sparse, near-deterministic rows: strong dependencies
        between positions; a large one gives near-uniform rows (near-independent positions)."""
        _check_size(vocab_size, length)
        if n_states < 1:
            raise MLMProbError(f"n_states must be at least 1, got {n_states}")
        if not concentration > 0:
            raise MLMProbError(f"concentration must be positive, got {concentration}")
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=generator)))  # torch can't seed these
        draw = lambda rows, k: torch.from_numpy(rng.dirichlet(np.full(k, concentration), size=rows))  # noqa: E731
        # Dirichlet draws with tiny concentration can underflow to exact zeros; keep every entry positive.
        fix = lambda p: (p + 1e-12) / (p + 1e-12).sum(-1, keepdim=True)  # noqa: E731
        hmm = cls(fix(draw(1, n_states)[0]), fix(draw(n_states, n_states)), fix(draw(n_states, vocab_size)), length)
        hmm.concentration = float(concentration)
        return hmm

    def tensors(self) -> dict[str, torch.Tensor]:
        return {"initial": self.initial, "transition": self.transition, "emission": self.hmm_emission}
