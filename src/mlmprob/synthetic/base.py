"""The interface of a synthetic language: ``V`` symbols ``0..V-1`` (id ``V`` is the mask, as in ``ExactMLM``), a fixed
length ``T``, exact ``log_prob``, ``log_marginal``, ``conditionals`` (``ExactMLM.logits`` semantics), ``sample`` and
``sample_given``; ``as_mlm()`` wraps one as a ``MaskedLM`` (:class:`LanguageMLM`)."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from ..errors import MLMProbError

MAX_ENUMERATION = 2_000_000  # V**T above which log_joint() refuses to enumerate


class SyntheticLanguage(ABC):
    """A distribution over ``V**T`` fixed-length sequences with exact conditionals (see module doc)."""

    vocab_size: int
    length: int
    KIND: str  # spec()'s "kind" (see ``synthetic.io``)
    SPEC: tuple[str, ...] = ("vocab_size", "length")  # spec()'s parameters: attributes of the language
    TENSORS: tuple[str, ...] = ()  # the parameter tensors that define it exactly (saved by ``save_language``)

    @property
    def mask_id(self) -> int:
        return self.vocab_size

    # -- to implement --------------------------------------------------------------------------------
    @abstractmethod
    def log_marginal(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Exact ``log p(x_O)`` per row ``[B]`` (float64); mask ids (``V``) are marginalised."""

    @abstractmethod
    def conditionals(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Exact log conditionals ``[B, T, V]`` (float64) of every position given the observed others."""

    @abstractmethod
    def sample_given(self, input_ids: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Exact samples ``[B, T]`` from ``p(x_M | x_O)``, one per row: observed positions are kept."""

    # -- shared --------------------------------------------------------------------------------------
    def spec(self) -> dict:
        """JSON-serialisable description: ``{"kind": KIND, **parameters}`` (see ``synthetic.io``)."""
        return {"kind": self.KIND, **{k: getattr(self, k, None) for k in self.SPEC}}

    def tensors(self) -> dict[str, torch.Tensor]:
        """The parameter tensors that define the language exactly (saved by ``save_language``)."""
        return {k: getattr(self, k) for k in self.TENSORS}

    def check_ids(self, input_ids, allow_mask: bool = True) -> torch.Tensor:
        """Validate ``input_ids`` at the boundary: integer ``[B, T]`` with ids in ``0..V`` (``V`` = mask)."""
        ids = torch.as_tensor(input_ids)
        if ids.dtype.is_floating_point or ids.dtype == torch.bool:
            raise MLMProbError(f"input_ids must be integer token ids, got dtype {ids.dtype}")
        ids = ids.long()
        if ids.dim() != 2 or ids.shape[1] != self.length:
            raise MLMProbError(f"input_ids must have shape [B, {self.length}], got {tuple(ids.shape)}")
        top = self.mask_id if allow_mask else self.vocab_size - 1
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) > top):
            what = f"0..{top} ({top} = mask)" if allow_mask else f"0..{top} (complete sequences, no mask)"
            raise MLMProbError(f"token ids must lie in {what}, got {int(ids.min())}..{int(ids.max())}")
        return ids

    def log_prob(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Exact ``log p(x)`` of complete sequences ``[B, T] -> [B]`` (float64)."""
        return self.log_marginal(self.check_ids(input_ids, allow_mask=False))

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` exact i.i.d. samples ``[n, T]`` (long)."""
        if n < 0:
            raise MLMProbError(f"number of samples must be >= 0, got {n}")
        return self.sample_given(torch.full((n, self.length), self.mask_id, dtype=torch.long), generator)

    def log_joint(self) -> torch.Tensor:
        """The whole log-joint as a ``[V] * T`` tensor (small languages only), for ``ExactMLM``."""
        from ..models.exact import all_sequences

        n = self.vocab_size**self.length
        if n > MAX_ENUMERATION:
            raise MLMProbError(f"V**T = {n} sequences is too many to enumerate (limit {MAX_ENUMERATION})")
        seqs = all_sequences(self.vocab_size, self.length)
        out = torch.cat([self.log_prob(chunk) for chunk in seqs.split(65536)])
        return out.reshape([self.vocab_size] * self.length)

    def as_mlm(self) -> LanguageMLM:
        """This language as a ``MaskedLM`` whose logits are its exact log conditionals."""
        return LanguageMLM(self)


class LanguageMLM:
    """A synthetic language behind the ``MaskedLM`` protocol: the exact ground-truth MLM.

    ``mask_id == vocab_size == V``; ``logits(ids)`` are the exact log conditionals (float32, like
    ``ExactMLM``); ``log_prob`` is exact. ``calls`` counts rows served.

    >>> import torch
    >>> from mlmprob.synthetic import PottsChain
    >>> m = PottsChain(3, 4, coupling=1.0, generator=torch.Generator().manual_seed(0)).as_mlm()
    >>> m.vocab_size, m.mask_id, m.logits(torch.tensor([[3, 0, 1, 3]])).shape
    (3, 3, torch.Size([1, 4, 3]))
    """

    def __init__(self, language: SyntheticLanguage):
        self.language = language
        self.vocab_size = language.vocab_size
        self.mask_id = language.mask_id
        self.length = language.length
        self.max_length = language.length
        self.calls = 0

    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        ids = self.language.check_ids(input_ids)
        self.calls += ids.shape[0]
        return self.language.conditionals(ids).float()

    def log_prob(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.language.log_prob(input_ids)

    def __repr__(self) -> str:
        return f"LanguageMLM({self.language!r})"
