"""A Potts model on a small ``rows x cols`` grid (flattened row-major, ``t = r * cols + c``), exact by a transfer matrix
over whole columns: ``p(x) ∝ exp(sum h_rc(x_rc) + J sum_{neighbours} [x == x'])``. A column is one of ``S =
V**rows`` states (unary: fields and vertical couplings; pairwise: horizontal couplings), so forward-backward over
columns is exact (:class:`~mlmprob.synthetic.chain.ChainLanguage`'s, its evidence a column's agreement with the
observed cells); a cell's conditional uses its column's evidence without its own row. Cost ``O(cols S**2)``."""

from __future__ import annotations

import torch

from ..errors import MLMProbError
from .chain import ChainLanguage
from .hmm import _check_size

MAX_COLUMN_STATES = 4096


class PottsGrid(ChainLanguage):
    """Potts model on a ``rows x cols`` grid (4-neighbour coupling ``J``, random fields); exact.

    >>> import torch
    >>> g = PottsGrid(3, 2, 3, coupling=1.0, generator=torch.Generator().manual_seed(0))
    >>> g.length, g.vocab_size, round(float(g.log_joint().exp().sum()), 9)
    (6, 3, 1.0)
    """

    KIND = "potts-grid"
    SPEC = ("vocab_size", "length", "rows", "cols", "coupling", "field_scale")
    TENSORS = ("fields",)

    def __init__(
        self,
        vocab_size: int,
        rows: int,
        cols: int,
        coupling: float = 1.0,
        field_scale: float = 1.0,
        generator: torch.Generator | None = None,
        fields: torch.Tensor | None = None,
    ):
        _check_size(vocab_size, rows * cols)
        if rows < 1 or cols < 1:
            raise MLMProbError(f"grid needs rows, cols >= 1, got {rows} x {cols}")
        S = vocab_size**rows
        if S > MAX_COLUMN_STATES:
            raise MLMProbError(
                f"V**rows = {S} column states is too many for exact inference "
                f"(limit {MAX_COLUMN_STATES}); use fewer rows (transpose the grid)"
            )
        if fields is None:
            fields = torch.randn(rows, cols, vocab_size, generator=generator, dtype=torch.float64) * float(field_scale)
        fields = torch.as_tensor(fields, dtype=torch.float64)
        if tuple(fields.shape) != (rows, cols, vocab_size):
            raise MLMProbError(f"fields must have shape [{rows}, {cols}, {vocab_size}], got {tuple(fields.shape)}")
        self.vocab_size, self.rows, self.cols, self.length = vocab_size, rows, cols, rows * cols
        self.coupling, self.field_scale, self.fields = float(coupling), float(field_scale), fields
        self.n_states = S
        # states[s, r]: the symbol at row r of column state s
        digits = vocab_size ** torch.arange(rows - 1, -1, -1)
        self.states = (torch.arange(S)[:, None] // digits) % vocab_size  # [S, R]
        J = self.coupling
        vert = (self.states[:, 1:] == self.states[:, :-1]).sum(1).double() * J  # [S]
        # unary[c, s] = sum_r h[r, c, s_r] + vertical couplings
        self.unary = fields[torch.arange(rows)[None, :], :, self.states].sum(1).T + vert  # [C, S]
        pairwise = (self.states[:, None, :] == self.states[None, :, :]).sum(-1).double() * J  # [S, S]
        self.pairwise = pairwise.expand(max(cols - 1, 0), S, S)
        self.log_z = self._log_evidence(torch.zeros(1, cols, S, dtype=torch.float64)).item()

    def _mismatch(self, ids: torch.Tensor) -> torch.Tensor:
        """Bool ``[B, C, R, S]``: cell (r, c) is observed and column state s disagrees with it."""
        g = ids.reshape(-1, self.rows, self.cols).transpose(1, 2)  # [B, C, R]
        obs = g != self.mask_id
        return obs[..., None] & (g[..., None] != self.states.T[None, None])  # states.T: [R, S]

    @staticmethod
    def _log_indicator(count: torch.Tensor) -> torch.Tensor:
        return torch.where(count == 0, 0.0, -torch.inf).double()

    def _evidence(self, ids: torch.Tensor) -> torch.Tensor:
        """``e [B, C, S]``: 0 where column state s agrees with every observed cell of column c, ``-inf`` elsewhere."""
        return self._log_indicator(self._mismatch(ids).sum(2))

    def conditionals(self, input_ids: torch.Tensor) -> torch.Tensor:
        ids = self.check_ids(input_ids)
        mism = self._mismatch(ids)  # [B, C, R, S]
        count = mism.sum(2)  # [B, C, S]
        post = self._posterior(self._log_indicator(count))  # [B, C, S], column c's own evidence excluded
        own = self._log_indicator(count[:, :, None, :] - mism.long())  # [B, C, R, S]: column c without row r
        w = post[:, :, None, :] + own  # [B, C, R, S]
        onehot = torch.where(self.states.T[:, :, None] == torch.arange(self.vocab_size), 0.0, -torch.inf).double()
        out = torch.logsumexp(w[..., None] + onehot, dim=3)  # [B, C, R, V]
        out = out - torch.logsumexp(out, -1, keepdim=True)
        return out.transpose(1, 2).reshape(ids.shape[0], self.length, self.vocab_size)

    def sample_given(self, input_ids: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        ids = self.check_ids(input_ids)
        if ids.shape[0] == 0:
            return ids.clone()
        grid = self.states[self._sample_states(ids, generator)].transpose(1, 2)  # column states [B, C] -> [B, R, C]
        return grid.reshape(ids.shape[0], self.length)

    def __repr__(self) -> str:
        return f"PottsGrid(vocab_size={self.vocab_size}, rows={self.rows}, cols={self.cols}, coupling={self.coupling})"
