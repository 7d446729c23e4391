"""Which token positions an algorithm touches, and what users type as positions: the one positions rule.

- Defaults: a :class:`Rule` gives, for a batch ``[B, L]``, the tokens that are neither special nor padding (or,
  ``by_words``, those with a word id), with ``include_masks`` the mask tokens too: :data:`TOKENS` (scorers),
  :data:`TOKENS_AND_MASKS` (``sample``, ``mask_predict``), :data:`WORDS_AND_MASKS` (sampling from text);
  docs/positions.md has the table. :func:`resolve` turns ``positions`` into a checked bool mask once.
- Users type 1-based residue (or word) numbers: :func:`parse_numbers` reads ``"3,5,10-12"``, :func:`word_mask` /
  :func:`word_positions` turn numbers into tokens and :func:`token_numbers` back. The Python API's ``positions``
  are 0-based token indices, special tokens counted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .errors import MLMProbError, PositionsError
from .models.alphabet import allowed_ids
from .models.protocol import MaskedLM
from .models.reader import reader_of


@dataclass(frozen=True)
class Rule:
    """A default rule: which positions of a row an algorithm touches when it is given none.

    ``include_masks``: the mask tokens inside a row are touched (and may be given); otherwise they are left out
    and an explicit one is refused. ``by_words``: the tokens with a word id (``word_ids >= 0``) rather than those
    with no special id. ``task``: what the positions are for, in the message for a row with none."""

    name: str
    include_masks: bool
    by_words: bool = False
    task: str = "to score"


TOKENS = Rule("tokens", include_masks=False)
TOKENS_AND_MASKS = Rule("tokens and masks", include_masks=True, task="to sample")
WORDS_AND_MASKS = Rule("words and masks", include_masks=True, by_words=True, task="to sample")
RULES = (TOKENS, TOKENS_AND_MASKS, WORDS_AND_MASKS)


@dataclass(frozen=True)
class Resolved:
    """A bool ``[B, L]`` mask already checked under ``rule`` (by :func:`resolve`, or e.g.
    :func:`mlmprob.sampling.stream.free_positions`): passed down as ``positions``, it is taken as it is."""

    mask: torch.Tensor
    rule: Rule


Positions = Sequence[int] | torch.Tensor | Resolved | None


def default_mask(
    mlm: MaskedLM, input_ids: torch.Tensor, rule: Rule, word_ids: torch.Tensor | None = None
) -> torch.Tensor:
    """Bool ``[B, L]``: the positions ``rule`` touches by default."""
    mlm = reader_of(mlm)
    if rule.by_words:
        if word_ids is None:
            raise MLMProbError(f"the rule {rule.name!r} needs the encoding's word ids")
        base = torch.as_tensor(word_ids) >= 0
    else:
        base = mlm.default_positions(input_ids)
    return base | ((input_ids == mlm.mask_id) & _inside(mlm, input_ids)) if rule.include_masks else base


def resolve(
    mlm: MaskedLM,
    input_ids: torch.Tensor,
    positions: Positions,
    rule: Rule,
    *,
    word_ids: torch.Tensor | None = None,
    allow_empty_rows: bool = False,
) -> torch.Tensor:
    """Bool ``[B, L]``: ``positions`` (None: ``rule``'s :func:`default_mask`; token indices shared by the batch; a
    bool mask; a :class:`Resolved` mask, taken as it is) checked against ``input_ids``: inside the rows, a token
    there unless ``rule.include_masks`` (then every mask token inside a row among them), and (unless
    ``allow_empty_rows``) at least one per row."""
    if isinstance(positions, Resolved):
        return _resolved(positions, input_ids, rule)
    mlm = reader_of(mlm)
    is_mask = input_ids == mlm.mask_id
    if positions is None:
        sel = default_mask(mlm, input_ids, rule, word_ids)
    elif rule.include_masks:
        filler = input_ids.masked_fill(is_mask, int(allowed_ids(mlm).nonzero()[0]))  # masks count as tokens
        sel = _explicit(mlm, filler, positions)
        _refuse(
            is_mask & _inside(mlm, input_ids) & ~sel,
            lambda b, t: f"position {t} of sequence {b} holds the mask token but is not among the free positions",
        )
    else:
        sel = _explicit(mlm, input_ids, positions)
        _refuse(
            sel & is_mask,
            lambda b, t: f"position {t} of sequence {b} holds the mask token; a scored position needs a token",
        )
        _refuse(  # CLS, SEP, ...: a score of one is no residue's (the table: special tokens never scored)
            sel & mlm.special_at(input_ids),
            lambda b, t: (
                f"position {t} of sequence {b} holds the special token {int(input_ids[b, t])}; special "
                "tokens are never scored (token indices count them: the first residue is at index 1 when the model "
                "adds a begin token)"
            ),
        )
    if not allow_empty_rows:
        none = "position to score (empty sequence?)" if rule.task == "to score" else f"free position {rule.task}"
        _refuse(~sel.any(-1), lambda b: f"sequence {b} has no {none}")
    return sel


def _inside(mlm, input_ids: torch.Tensor) -> torch.Tensor:
    """Bool ``[B, L]``: the positions inside each row (not padding)."""
    return torch.arange(input_ids.shape[1])[None, :] < reader_of(mlm).lengths(input_ids)[:, None]


def _refuse(bad: torch.Tensor, why) -> None:
    """Raise ``PositionsError(why(*index))`` at the first index where ``bad`` holds, if any."""
    if bad.any():
        raise PositionsError(why(*bad.nonzero()[0].tolist()))


def _resolved(given: Resolved, input_ids: torch.Tensor, rule: Rule) -> torch.Tensor:
    if given.rule.include_masks != rule.include_masks:
        raise PositionsError(f"positions resolved under the rule {given.rule.name!r} cannot stand for {rule.name!r}")
    if tuple(given.mask.shape) != tuple(input_ids.shape) or given.mask.dtype != torch.bool:
        raise PositionsError(
            f"resolved positions have shape {tuple(given.mask.shape)}, input_ids has shape {tuple(input_ids.shape)}"
        )
    return given.mask.clone()  # the caller keeps its own


def _explicit(mlm: MaskedLM, input_ids: torch.Tensor, positions) -> torch.Tensor:
    """Token indices shared by the batch, or a bool mask ``[B, L]``, as a bool mask inside the rows."""
    B, L = input_ids.shape
    try:
        p = torch.as_tensor(positions)
    except (TypeError, ValueError, RuntimeError):  # None among them, a string: torch's own message names neither
        raise PositionsError(
            f"positions must be a list of integer token indices or a bool mask [B, L], got "
            f"{type(positions).__name__} {positions!r:.40}"
        ) from None
    if p.device.type == "meta":  # a shape without values: torch's errors name neither the argument nor the cause
        raise PositionsError("positions are on the meta device, which holds no values: give them on the cpu")
    p = p.long() if p.numel() == 0 else p
    if p.dtype == torch.bool:
        if tuple(p.shape) != (B, L):
            raise PositionsError(f"positions mask has shape {tuple(p.shape)}, input_ids has shape {(B, L)}")
        sel = p.clone()
    else:
        if p.dim() != 1 or p.dtype.is_floating_point:
            raise PositionsError(
                f"positions must be a list of integer indices or a bool mask [B, L]; "
                f"got shape {tuple(p.shape)}, dtype {p.dtype}"
            )
        p = p.long()
        if p.numel() and (p.min() < -L or p.max() >= L):
            bad = int(p.max() if p.max() >= L else p.min())
            raise PositionsError(f"position {bad} is outside sequences of length {L}")
        sel = torch.zeros(B, L, dtype=torch.bool)
        sel[:, p % L] = True
    lens = reader_of(mlm).lengths(input_ids)
    _refuse(
        sel & ~_inside(mlm, input_ids), lambda b, t: f"position {t} is padding in sequence {b} (length {int(lens[b])})"
    )
    return sel


# -- what users type: 1-based residue/word numbers ---------------------------------------------------------

#: The most numbers one ``--positions`` text may name (ranges counted out): more than any sequence a model reads, so
#: a typo such as ``1-1000000000`` is refused before a billion-element list is built.
MAX_NUMBERS = 1_000_000


def parse_numbers(text: str, name: str = "positions") -> list[int]:
    """1-based residue/word numbers and inclusive ranges, as users type them: ``"3,5,10-12"`` ->
    ``[3, 5, 10, 11, 12]``; a 0 (or any number below 1) is refused in one line that says the base."""
    out: list[int] = []
    for part in str(text or "").replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            lo, hi = (int(x) for x in part.split("-", 1)) if "-" in part[1:] else (int(part), int(part))
        except ValueError:
            raise MLMProbError(f"{name} must be numbers or ranges like 3,5,10-12 (1-based); got {part!r}") from None
        if hi < lo:
            raise MLMProbError(f"{name}: range {part!r} runs backwards")
        if len(out) + hi - lo + 1 > MAX_NUMBERS:
            raise MLMProbError(f"{name}: range {part!r} names more than {MAX_NUMBERS:,} positions in all")
        out.extend(range(lo, hi + 1))
    if not out:
        raise MLMProbError(f"{name} is empty")
    bad = [n for n in out if n < 1]
    if bad:
        raise MLMProbError(
            f"{name}: position {bad[0]}; positions count from 1: they are residue/word numbers, 1-based as in "
            "mutation strings like A23G (sample --positions was 0-based in earlier versions)"
        )
    if len(set(out)) != len(out):
        twice = next(n for n, count in Counter(out).items() if count > 1)  # the first in the text's order
        raise MLMProbError(f"{name}: position {twice} is given twice")
    return out


def word_mask(word_ids: torch.Tensor, numbers: Sequence[int], name: str = "") -> torch.Tensor:
    """Bool ``[L]``: every token of the 1-based residue/word ``numbers`` in one row's ``word_ids`` (-1: special
    tokens and padding). ``name`` prefixes the message of a number outside the row."""
    word_ids = torch.as_tensor(word_ids)
    n_words = int(word_ids.max()) + 1 if (word_ids >= 0).any() else 0
    bad = [n for n in numbers if not 1 <= n <= n_words]
    if bad:
        raise MLMProbError(
            f"{name + ': ' if name else ''}position {bad[0]} is outside the sequence's {n_words} residues/words"
        )
    return torch.isin(word_ids, torch.tensor([int(n) - 1 for n in numbers], dtype=torch.long))


def word_positions(word_ids: torch.Tensor, numbers: Sequence[int], name: str = "") -> list[int]:
    """The token positions (0-based, sorted) of the 1-based residue/word ``numbers``: :func:`word_mask`'s."""
    return word_mask(word_ids, numbers, name).nonzero()[:, 0].tolist()


def token_numbers(word_ids: torch.Tensor, input_ids: torch.Tensor, mask_id: int) -> list[int]:
    """The 1-based residue/word number of every token of one row, as users type and read them: its word's
    (``word_ids + 1``: :func:`word_positions` inverts it); a mask token without a word id counts as one word after
    the token before it (each ``_`` of a gap); 0 at special tokens and padding."""
    out, last = [], 0
    for w, t in zip(torch.as_tensor(word_ids).tolist(), torch.as_tensor(input_ids).tolist(), strict=True):
        n = w + 1 if w >= 0 else last + 1 if t == mask_id else 0
        out.append(n)
        last = n or last
    return out
