"""Sequence energies: pseudo-log-likelihood (E_local), raw-logit energy (E_raw), whole-word PLL.

- ``E_local(x) = -sum_t log q_t(x_t | x with t masked)``  (Salazar et al. 2020; Goyal et al. eq. 2.2)
- ``E_raw(x)   = -sum_t logit_t(x_t | x with t masked)``  (Goyal et al. sec. 2.1)
- whole-word left-to-right PLL (Kauf & Ivanova 2023): when scoring a sub-word, the sub-words of the same word to
  its right are masked too.

The sums run over ``positions``: by default every position that is not a special token, padding or a mask (the rule
:data:`mlmprob.positions.TOKENS`). All sums are accumulated in float64."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .batching import iter_masked_logits
from .errors import MLMProbError, PositionsError
from .models.protocol import MaskedLM
from .models.reader import reader_of
from .positions import TOKENS, Positions, resolve
from .settings import Spec

ENERGY_KINDS = ("local", "raw")


@dataclass(frozen=True)
class TokenScoresSpec(Spec):
    """The settings of :func:`token_scores` and the exact :func:`pll`: none (``positions`` and ``word_ids`` are
    inputs); here so that every algorithm takes ``spec=None, **overrides`` alike."""


@dataclass(frozen=True)
class EnergySpec(Spec):
    """The settings of :func:`energy`: ``kind`` ``"local"`` (``E_local = -PLL``) or ``"raw"`` (``E_raw``).

    >>> EnergySpec(kind="global")
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: energy kind must be 'local' or 'raw', got 'global'
    """

    kind: str = "local"

    def __post_init__(self):
        if self.kind not in ENERGY_KINDS:
            raise MLMProbError(f"energy kind must be 'local' or 'raw', got {self.kind!r}")


def row_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum over the last dimension, added left to right: the same bits however long a row's padding is (a
    vectorised ``sum`` groups terms by row length and vector width: a padded record could differ in its last bit)."""
    return x.sum(-1) if x.shape[-1] == 0 else x.cumsum(-1)[..., -1]


@dataclass(frozen=True)
class TokenScores:
    """Per-token scores of a batch ``[B, L]``: ``log_prob[b, t]`` is ``log q_t(x_t | ...)`` and ``raw[b, t]`` the raw
    logit of ``x_t``, both with the copy's mask applied, and both 0 where ``positions[b, t]`` is False."""

    log_prob: torch.Tensor
    raw: torch.Tensor
    positions: torch.Tensor

    @property
    def pll(self) -> torch.Tensor:
        """Pseudo-log-likelihood per sequence ``[B]``."""
        return row_sum(self.log_prob)

    @property
    def e_local(self) -> torch.Tensor:
        return -self.pll

    @property
    def e_raw(self) -> torch.Tensor:
        return -row_sum(self.raw)

    @property
    def n_tokens(self) -> torch.Tensor:
        return self.positions.sum(-1)


def target_scores(
    logits: torch.Tensor, targets: torch.Tensor, dtype: torch.dtype = torch.float64
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log q(target), raw logit of target)``, float64, of logits ``[..., V]`` and targets ``[...]``, computed in
    ``dtype``: the one per-token arithmetic of ``E_local`` and ``E_raw`` (:func:`token_scores`, the samplers)."""
    x = logits.to(dtype)
    raw = x.gather(-1, targets[..., None])[..., 0]
    return (raw - torch.logsumexp(x, -1)).double(), raw.double()


def energies_from_logits(
    logits: torch.Tensor, ids: torch.Tensor, scored: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(E_local, E_raw)`` ``[B]`` float64 from the single-site logits ``[B, L, V]`` of ``ids`` ``[B, L]`` (each
    read with its position masked), summed over ``scored`` (bool ``[B, L]``): :func:`energy`'s numbers."""
    lp, raw = target_scores(logits, ids)
    s = TokenScores(lp.masked_fill(~scored, 0.0), raw.masked_fill(~scored, 0.0), scored)
    return s.e_local, s.e_raw


def check_has_values(t: torch.Tensor, name: str) -> None:
    """Refuse a tensor on the ``meta`` device (a shape without values) in one line naming the argument."""
    if t.device.type == "meta":
        raise MLMProbError(
            f"{name} is on the meta device, which holds no values: give token ids on the cpu (or the model's device)"
        )


def check_input_ids(mlm: MaskedLM, input_ids) -> torch.Tensor:
    """Validate ``input_ids`` at the boundary: LongTensor ``[B, L]``, ids in the vocabulary, length."""
    if isinstance(input_ids, (str, bytes)) or (
        isinstance(input_ids, (list, tuple)) and any(isinstance(x, (str, bytes)) for x in input_ids)
    ):
        raise MLMProbError(
            f"input_ids must be integer token ids [B, L], got {type(input_ids).__name__} {input_ids!r:.40}: "
            'encode text first (mlm.encode(["EVQL..."]).input_ids)'
        )
    try:
        ids = torch.as_tensor(input_ids)
    except (TypeError, ValueError, RuntimeError):  # None, a ragged list: torch's own message names neither
        raise MLMProbError(
            f"input_ids must be integer token ids [B, L] (a tensor or a list of equal-length lists of ints), got "
            f"{type(input_ids).__name__} {input_ids!r:.40}"
        ) from None
    check_has_values(ids, "input_ids")
    if ids.numel() == 0:
        raise MLMProbError(f"input_ids is empty: shape {tuple(ids.shape)}")
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise MLMProbError(f"input_ids must be integer token ids, got dtype {ids.dtype}")
    ids = ids.long()
    if ids.dim() == 1:
        raise MLMProbError(
            f"input_ids must have shape [B, L]; got a 1-D tensor of length {len(ids)} "
            "(use input_ids[None] for one sequence)"
        )
    if ids.dim() != 2:
        raise MLMProbError(f"input_ids must have shape [B, L], got {tuple(ids.shape)}")
    r = reader_of(mlm)
    if bool(r.foreign(ids).any()):
        raise MLMProbError(
            f"token ids must lie in {r.id_range()} for this model, got "
            f"{int(ids.min())}..{int(ids.max())} (a vocabulary mismatch?)"
        )
    max_len, lengths = r.max_length, r.lengths(ids)
    if max_len is not None and (lengths > max_len).any():
        b = int((lengths > max_len).nonzero()[0])
        raise MLMProbError(f"sequence {b} has {int(lengths[b])} tokens; the model accepts at most {max_len}")
    return ids


def as_input_ids(mlm: MaskedLM, input_ids, name: str = "input_ids") -> torch.Tensor:
    """What the scoring entry points score, as checked token ids ``[B, L]`` (:func:`check_input_ids`): token ids, or
    text (a sequence or a list of them) encoded by the model's tokenizer (right-padded: the same scores)."""
    texts = [input_ids] if isinstance(input_ids, str) else input_ids
    if isinstance(texts, (list, tuple)) and any(isinstance(x, str) for x in texts):
        if not all(isinstance(x, str) for x in texts):
            raise MLMProbError(
                f"{name} mixes text and token ids: give sequences (strings) or token ids [B, L], not both"
            )
        r = reader_of(mlm)
        if not r.has_text:
            raise MLMProbError(f"{name} is text, but {r.name} has no tokenizer: give token ids [B, L]")
        return check_input_ids(mlm, r.encode(list(texts)).input_ids)
    if isinstance(texts, (list, tuple)) and not texts:
        raise MLMProbError(f"{name} is empty: give a sequence, a list of sequences or token ids [B, L]")
    if texts is None or isinstance(texts, (int, float, bytes)):
        raise MLMProbError(
            f"{name} must be integer token ids [B, L] or text (a sequence or a list of sequences), got "
            f"{type(texts).__name__} {texts!r:.40}"
        )
    return check_input_ids(mlm, input_ids)


def as_row(input_ids, name: str = "input_ids") -> torch.Tensor:
    """One sequence as a 1-D LongTensor: ``[L]`` or ``[1, L]`` integer token ids with ``L > 0`` (errors name
    the argument, ``name``)."""
    try:
        ids = torch.as_tensor(input_ids)
    except (TypeError, ValueError, RuntimeError):  # a string, a ragged list: torch's own message names neither
        raise MLMProbError(
            f"{name} must be integer token ids (a tensor or a list of ints), got {type(input_ids).__name__} "
            f"{str(input_ids)[:40]!r}"
        ) from None
    check_has_values(ids, name)
    if ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise MLMProbError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    ids = ids.long()
    if ids.dim() == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.dim() != 1 or ids.numel() == 0:
        raise MLMProbError(
            f"{name} must have shape [L] or [1, L] with L > 0, got {tuple(torch.as_tensor(input_ids).shape)}"
        )
    return ids


def resolve_positions(
    mlm: MaskedLM, input_ids: torch.Tensor, positions: Positions, *, allow_empty_rows: bool = False
) -> torch.Tensor:
    """``positions`` (None, indices shared by the batch, or bool ``[B, L]``) as a checked bool ``[B, L]`` mask:
    :func:`mlmprob.positions.resolve` under :data:`~mlmprob.positions.TOKENS` (a mask token is never scored)."""
    return resolve(mlm, input_ids, positions, TOKENS, allow_empty_rows=allow_empty_rows)


def token_scores(
    mlm: MaskedLM,
    input_ids,
    positions: Positions = None,
    spec: TokenScoresSpec | None = None,
    *,
    word_ids: torch.Tensor | None = None,
    progress: Callable[[int], None] | None = None,
    **overrides,
) -> TokenScores:
    """Per-token log-probabilities and raw logits, one masked copy per scored position.

    ``input_ids``: token ids ``[B, L]`` or text (a sequence or a list of sequences: :func:`as_input_ids`). With
    ``word_ids`` (``[B, L]``, -1 for special tokens) the whole-word l2r variant is used. ``spec``
    (:class:`TokenScoresSpec`) has no settings: the keywords of every algorithm, taken alike.

    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> s = token_scores(m, torch.tensor([[1, 1]]))
    >>> s.log_prob.exp()        # p(x1=1 | x2=1) = 2/3, p(x2=1 | x1=1) = 4/7
    tensor([[0.6667, 0.5714]], dtype=torch.float64)
    """
    TokenScoresSpec.of(spec, **overrides)
    ids = as_input_ids(mlm, input_ids)
    sel = resolve_positions(mlm, ids, positions)
    rows, cols = sel.nonzero(as_tuple=True)
    extra = None
    if word_ids is not None:
        try:
            word_ids = torch.as_tensor(word_ids, dtype=torch.long)
        except (TypeError, ValueError, RuntimeError):  # text, None inside: torch's message does not name word_ids
            raise PositionsError(
                f"word_ids must be integer word numbers [B, L] (-1 for special tokens), got "
                f"{type(word_ids).__name__} {word_ids!r:.40}"
            ) from None
        if word_ids.shape != ids.shape:
            raise PositionsError(f"word_ids has shape {tuple(word_ids.shape)}, input_ids has shape {tuple(ids.shape)}")
        w = word_ids[rows]  # the whole-word l2r PLL masks the later sub-words of each scored position's word too
        own = w.gather(1, cols[:, None])
        extra = (w == own) & (torch.arange(w.shape[1])[None, :] > cols[:, None]) & (own >= 0)
    dev = reader_of(mlm).device
    lp, raw = (torch.zeros(ids.shape, dtype=torch.float64, device=dev) for _ in range(2))
    rows_d, cols_d = rows.to(dev), cols.to(dev)
    targets = ids.to(dev)[rows_d, cols_d]
    # log-softmax in float64 on the CPU; float32 on accelerators (a [n, V] float64 copy costs too much there)
    acc = torch.float64 if dev.type == "cpu" else torch.float32
    for idx, logits in iter_masked_logits(mlm, ids, rows, cols, extra_mask=extra, progress=progress, on_device=True):
        r, c = rows_d[idx], cols_d[idx]
        lp[r, c], raw[r, c] = target_scores(logits, targets[idx], acc)
    return TokenScores(lp.cpu(), raw.cpu(), sel)  # one copy to the host per call


def pll(
    mlm: MaskedLM,
    input_ids,
    positions: Positions = None,
    spec: TokenScoresSpec | None = None,
    *,
    word_ids=None,
    **overrides,
) -> torch.Tensor:
    """The exact log pseudo-likelihood ``sum_t log q_t(x_t | x with t masked)`` per sequence, ``[B]`` (float64)
    (``mlmprob.pll`` is this, or on request its one-pass estimate).

    ``input_ids``: token ids ``[B, L]`` or text (a sequence or a list of sequences: :func:`as_input_ids`).
    ``positions`` is None (every non-special position), a list of indices shared by the batch, or a
    bool mask ``[B, L]``. ``word_ids`` switches to the whole-word l2r variant."""
    return token_scores(mlm, input_ids, positions, spec, word_ids=word_ids, **overrides).pll


def energy(
    mlm: MaskedLM, input_ids, positions: Positions = None, spec: EnergySpec | None = None, *, word_ids=None, **overrides
) -> torch.Tensor:
    """Energy per sequence ``[B]`` (float64) of the settings ``spec`` (:class:`EnergySpec`; keywords override its
    fields): ``kind="local"`` is ``-pll``, ``kind="raw"`` is ``-sum_t logit_t(x_t | x with t masked)``; ``input_ids``
    as in :func:`pll` (token ids or text).

    >>> from mlmprob import ExactMLM
    >>> m = ExactMLM(torch.log(torch.tensor([[0.1, 0.2], [0.3, 0.4]])))
    >>> round(float(energy(m, torch.tensor([[1, 1]]), kind="local")), 4)
    0.9651
    """
    spec = EnergySpec.of(spec, **overrides)
    s = token_scores(mlm, input_ids, positions, word_ids=word_ids)
    return s.e_local if spec.kind == "local" else s.e_raw
