"""The model contract: every member mlmprob reads from a masked LM, in one typed object.

A :class:`Reader` wraps a model once (``load_mlm`` returns one; :func:`reader_of` wraps a plain ``MaskedLM``); it
alone asks a model what it offers. Its members (default for a plain model): ``mask_id``, ``vocab_size``,
``logits(ids)`` (required); ``pad_id`` (None: no padding; a tokenizer without a pad pads with a reserved id past the
vocabulary, :func:`mlmprob.models.tokenizers.padding_id`); ``special_ids`` (never scored or proposed by default;
none); ``proposal_ids`` (None: every id may be proposed); ``max_length`` (special tokens included; None: no limit);
``window`` (long proteins; None); ``device``, ``dtype`` (CPU, float32); ``name``; ``pads_safely``
(:mod:`mlmprob.models.probe`); ``head`` (``"shortcut"``, ``"full"`` or ``"logits"``); ``batch_tokens`` (the forward
budget; None: the device's default; :meth:`Reader.with_budget`); ``tokenizer`` (None for id-only models). Optional
reads (``logits_at``, ``device_logits_at``, ``hidden_at``, ``head_logits``, ``input_embedding``) are offered when
the model has them."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch

from ..errors import MLMProbError

HIDDEN_READS = ("hidden_at", "head_logits", "input_embedding")  # what the one-pass PLL reads


def _budget(n) -> int | None:
    if n is not None and int(n) < 1:
        raise MLMProbError(f"batch_tokens must be positive, got {n}")
    return None if n is None else int(n)


def _int_of(mlm, name: str) -> int | None:
    value = getattr(mlm, name, None)
    return None if value is None else int(value)


class Reader:
    """A masked LM behind the model contract (see the module doc). Build with :func:`reader_of`."""

    def __init__(self, mlm, *, batch_tokens: int | None = None):
        if isinstance(mlm, Reader):
            raise TypeError("already a Reader: use reader_of")
        for need in ("mask_id", "vocab_size"):  # ``logits`` is looked up when it is read
            if not hasattr(mlm, need):
                raise MLMProbError(
                    f"{type(mlm).__name__} is not a masked LM: it has no {need!r} "
                    "(a masked LM needs mask_id, vocab_size and logits(input_ids))"
                )
        # without a budget given, a wrapper's own (WindowedMLM, the one-pass hidden view), if any
        self.batch_tokens = _budget(batch_tokens) if batch_tokens is not None else _int_of(mlm, "batch_tokens")
        self.wrapped = mlm
        self.mask_id: int = int(mlm.mask_id)
        self.vocab_size: int = int(mlm.vocab_size)
        self.pad_id = _int_of(mlm, "pad_id")
        self.special_ids: frozenset[int] = frozenset(int(i) for i in (getattr(mlm, "special_ids", ()) or ()))
        ids = getattr(mlm, "proposal_ids", None)
        self.proposal_ids: torch.Tensor | None = None if ids is None else torch.as_tensor(ids, dtype=torch.long)
        self.max_length = _int_of(mlm, "max_length")
        self.window = _int_of(mlm, "window")
        self.device: torch.device = torch.device(getattr(mlm, "device", None) or "cpu")
        self.dtype: torch.dtype = getattr(mlm, "dtype", None) or torch.float32
        self.name: str = str(getattr(mlm, "name", "") or type(mlm).__name__)
        self.tokenizer = getattr(mlm, "tokenizer", None)
        self.has_text: bool = callable(getattr(mlm, "encode", None)) and callable(getattr(mlm, "decode", None))
        self.core = getattr(mlm, "inner", mlm)  # the model adapter behind a window, else the wrapped model
        # whether the model has its own ``device_logits_at`` (inputs and logits stay on its device); looked up on
        # the class: a wrapper that forwards other attributes must not have its inner model's used behind its back
        self.has_fast_path: bool = hasattr(type(mlm), "device_logits_at")
        self._at = hasattr(type(mlm), "logits_at") or hasattr(mlm, "logits_at")

    # -- what the probe found (read live: the load-time probe sets them after wrapping) ----------------
    @property
    def pads_safely(self) -> bool:
        return bool(getattr(self.core, "pads_safely", True))

    @property
    def head(self) -> str:
        if not self._at:
            return "logits"
        return "shortcut" if getattr(self.core, "head_shortcut", True) else "full"

    @property
    def probe(self):
        """The load-time probe's result (:class:`mlmprob.models.probe.ProbeResult`), or None."""
        return getattr(self.core, "probe", None)

    @property
    def fused(self) -> bool | None:
        """Whether mlmprob's fused encoder forward runs (None: not a Hugging Face adapter)."""
        fused = getattr(self.core, "fused", None)
        return fused if isinstance(fused, bool) else None

    @property
    def model(self):
        """The underlying ``torch.nn.Module`` (a Hugging Face model), or None."""
        m = getattr(self.core, "model", None)
        return m if isinstance(m, torch.nn.Module) else None

    @property
    def has_hidden(self) -> bool:
        """Whether the model offers hidden states and a separable head (the one-pass PLL's; a window its inner's)."""
        w = self.wrapped
        return callable(getattr(w, "hidden_at", None)) and callable(getattr(w, "head_logits", None))

    @property
    def missing_hidden(self) -> tuple[str, ...]:
        """The reads of :data:`HIDDEN_READS` the wrapped model's own class does not define (a window: none)."""
        return tuple(n for n in HIDDEN_READS if not hasattr(type(self.wrapped), n))

    def with_budget(self, batch_tokens: int | None) -> Reader:
        """The same model with another forward budget (``None``: the device's default)."""
        out = copy.copy(self)
        out.batch_tokens = _budget(batch_tokens)
        return out

    # -- rows --------------------------------------------------------------------------------------------
    def lengths(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Each row's length without its right padding (``L`` for every row of a model without padding)."""
        B, L = input_ids.shape
        if self.pad_id is None:
            return torch.full((B,), L, dtype=torch.long)
        keep = input_ids != self.pad_id
        return (torch.arange(1, L + 1, device=input_ids.device).expand(B, L) * keep).max(dim=1).values

    def foreign(self, ids: torch.Tensor) -> torch.Tensor:
        """Bool like ``ids``: ids the model cannot read (outside the vocabulary, and neither mask nor padding)."""
        ids = torch.as_tensor(ids)
        bad = (ids < 0) | (ids >= self.vocab_size)
        for ok in {self.mask_id, self.pad_id} - {None}:
            bad &= ids != ok
        return bad

    def id_range(self) -> str:
        """The readable ids, for messages: ``0..V-1`` (and the mask/padding ids when outside it)."""
        allowed = {i for i in (self.mask_id, self.pad_id) if i is not None}
        hi = self.vocab_size - 1
        while hi + 1 in allowed:
            hi += 1
        return f"0..{hi}" + "".join(f", {i}" for i in sorted(i for i in allowed if i > hi))

    def default_positions(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Bool ``[B, L]``: positions holding neither a special id, padding nor the mask."""
        sel = torch.ones_like(input_ids, dtype=torch.bool)
        for s in self.special_ids | ({self.pad_id} - {None}) | {self.mask_id}:
            sel &= input_ids != s
        return sel

    def special_at(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Bool, shaped as ``input_ids``: a special id or padding (not the mask, which stands for a residue); the one
        definition scoring, pairs and gaps refuse a position by."""
        return ~self.default_positions(input_ids) & (input_ids != self.mask_id)

    # -- reads -------------------------------------------------------------------------------------------
    def logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.wrapped.logits(input_ids)

    def logits_at(self, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """Logits ``[N, V]`` at ``(rows[n], cols[n])`` (the head only there when the model offers it)."""
        fn = getattr(self.wrapped, "logits_at", None)
        return fn(input_ids, rows, cols) if fn is not None else self.wrapped.logits(input_ids)[rows, cols]

    def device_logits_at(self, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """The forward primitive's hot path: inputs on the model's device, logits stay there."""
        if self.has_fast_path:
            return self.wrapped.device_logits_at(input_ids, rows, cols)
        return self.logits_at(input_ids.cpu(), rows.cpu(), cols.cpu()).to(input_ids.device)

    def hidden_at(self, input_ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        return self._optional("hidden_at")(input_ids, rows, cols)

    def head_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self._optional("head_logits")(hidden)

    def input_embedding(self, ids: torch.Tensor) -> torch.Tensor:
        return self._optional("input_embedding")(ids)

    def _optional(self, member: str):
        fn = getattr(self.wrapped, member, None)
        if not callable(fn):
            raise MLMProbError(
                f"{self.name}: this model offers no {member} (it is not a Hugging Face masked LM with a separable head)"
            )
        return fn

    # -- text --------------------------------------------------------------------------------------------
    def encode(self, texts: Sequence[str]):
        if not self.has_text:
            raise MLMProbError(f"{self.name} has no tokenizer: give token ids, not text")
        return self.wrapped.encode(texts)

    def decode(self, ids) -> str:
        if not self.has_text:
            raise MLMProbError(f"{self.name} has no tokenizer: it cannot turn ids into text")
        return self.wrapped.decode(ids)

    def __repr__(self) -> str:
        return f"Reader({self.wrapped!r})"


def reader_of(mlm, batch_tokens: int | None = None) -> Reader:
    """``mlm`` behind the model contract: itself if it is a :class:`Reader` (with ``batch_tokens`` set when
    given), else a new Reader wrapping it."""
    if isinstance(mlm, Reader):
        return mlm if batch_tokens is None or batch_tokens == mlm.batch_tokens else mlm.with_budget(batch_tokens)
    return Reader(mlm, batch_tokens=batch_tokens)


def name_of(mlm) -> str:
    """A label for reports: the reader's name, else the object's ``name`` or its class name (any object)."""
    return str(getattr(mlm, "name", "") or type(mlm).__name__)
