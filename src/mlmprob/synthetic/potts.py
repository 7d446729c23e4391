"""A Potts chain: nearest-neighbour couplings with a tunable strength, plus random local fields."""

from __future__ import annotations

import torch

from ..errors import MLMProbError
from .chain import ChainLanguage
from .hmm import _check_size


class PottsChain(ChainLanguage):
    """``p(x) ∝ exp( sum_t h_t(x_t) + J sum_t [x_t == x_{t+1}] )`` over ``V`` symbols, ``T`` positions.

    ``coupling`` ``J`` sets the strength of the dependencies (0: independent positions; large
    positive: long runs of equal symbols, the strong-dependency regime; negative: neighbours
    differ). ``fields`` ``h`` ``[T, V]`` are drawn i.i.d. normal with standard deviation
    ``field_scale`` from ``generator`` unless given. Exact by transfer-matrix forward-backward.

    >>> import torch
    >>> weak = PottsChain(3, 6, coupling=0.0, generator=torch.Generator().manual_seed(0))
    >>> strong = PottsChain(3, 6, coupling=3.0, generator=torch.Generator().manual_seed(0))
    >>> x = torch.tensor([[0, 0, 0, 0, 0, 0]])
    >>> bool(strong.log_prob(x) > weak.log_prob(x))
    True
    """

    KIND = "potts"
    SPEC = ("vocab_size", "length", "coupling", "field_scale")
    TENSORS = ("fields",)

    def __init__(
        self,
        vocab_size: int,
        length: int,
        coupling: float = 1.0,
        field_scale: float = 1.0,
        generator: torch.Generator | None = None,
        fields: torch.Tensor | None = None,
    ):
        _check_size(vocab_size, length)
        if fields is None:
            fields = torch.randn(length, vocab_size, generator=generator, dtype=torch.float64) * float(field_scale)
        fields = torch.as_tensor(fields, dtype=torch.float64)
        if tuple(fields.shape) != (length, vocab_size):
            raise MLMProbError(f"fields must have shape [{length}, {vocab_size}], got {tuple(fields.shape)}")
        self.coupling, self.field_scale, self.fields = float(coupling), float(field_scale), fields
        eye = torch.eye(vocab_size, dtype=torch.float64)
        super().__init__(fields, self.coupling * eye, eye.log())

    def energy(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Unnormalised log-probability ``sum h + J sum [equal neighbours]`` of complete sequences ``[B]``."""
        ids = self.check_ids(input_ids, allow_mask=False)
        h = self.fields[torch.arange(self.length), ids].sum(-1)
        return h + self.coupling * (ids[:, 1:] == ids[:, :-1]).sum(-1).double()

    def log_prob(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.energy(input_ids) - self.log_z
