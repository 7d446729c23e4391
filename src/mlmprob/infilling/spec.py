"""``InfillSpec``: the settings of an infilling run (``mlmprob infill``, :class:`~mlmprob.infilling.stream.InfillJob`,
:func:`~mlmprob.infilling.infill`, the app), frozen and validated once where it is made.

What needs the model (the pivot written as a token of its vocabulary) is checked when a job prepares
(:meth:`InfillSpec.pivot_id`). :meth:`InfillSpec.recorded` (its settings) is what the output's configuration and
every streamed row record, in this order."""

from __future__ import annotations

from dataclasses import dataclass

from ..argtypes import checked
from ..errors import MLMProbError
from ..fields import option
from ..settings import Spec, check_count

METHODS = ("standard", "hcb")
MASK_NAMES = ("mask", "[mask]", "<mask>")


#: How a record's gaps are filled: all at once (``joint``) or each alone (``each``).
GAP_MODES = ("joint", "each")

#: The widest beam: every hypothesis is a model row per step and every fill kept is returned (and printed).
MAX_BEAM_SIZE = 10_000


def check_beam_size(beam_size, name: str = "beam_size") -> int:
    """``beam_size`` checked: a positive integer, at most :data:`MAX_BEAM_SIZE`."""
    return check_count(name, beam_size, MAX_BEAM_SIZE, "each fill kept is a model row per step and a row of the result")


def check_order(order: str) -> str:
    if order not in ("l2r", "best"):
        raise MLMProbError(f"unknown order {order!r}; use 'l2r' (left to right) or 'best' (best to worst)")
    return order


@dataclass(frozen=True)
class InfillSpec(Spec):
    """``method``: ``"hcb"`` (the CLI's default) or ``"standard"``; ``order``: ``"l2r"`` or ``"best"``;
    ``beam_size``: fills kept; ``pivot``: HCB's pivot as the user wrote it (a token, a token id, or None / "mask"
    for the mask token; an ``int`` is taken as its id). Each field is ``mlmprob infill``'s flag of its name
    (:func:`mlmprob.fields.add_field_flags`)."""

    method: str = option(
        "hcb",
        "beam search score: standard scores a fill by its log-probability (nats, <= 0), hcb by its log-ratio to the "
        "pivot (nats, not a probability)",
        choices=("hcb", "standard"),
    )
    order: str = option(
        "l2r", "left to right, or best to worst (most confident position first)", choices=("l2r", "best")
    )
    beam_size: int = option(5, "beam size = number of fills kept", type=checked(int, check_beam_size), aliases=("-k",))
    pivot: str | None = option(None, "HCB pivot token or id (default: the mask token)")

    def __post_init__(self):
        if self.method not in METHODS:
            raise MLMProbError(f"unknown infilling method {self.method!r}; use one of {', '.join(METHODS)}")
        check_order(self.order)
        check_beam_size(self.beam_size)
        if isinstance(self.pivot, int) and not isinstance(self.pivot, bool):
            object.__setattr__(self, "pivot", str(self.pivot))
        if self.pivot is not None and not isinstance(self.pivot, str):
            raise MLMProbError(f"pivot must be a token, a token id or None (the mask), got {self.pivot!r}")
        if self.method == "standard" and self.pivot is not None:
            raise MLMProbError("--pivot: the pivot is used only by method='hcb'")  # the CLI's message

    def settings(self) -> dict:
        """The fields, the pivot written ``"mask"`` when it is the mask token (None)."""
        return {**super().settings(), "pivot": self.pivot or "mask"}

    def pivot_id(self, mlm) -> int | None:
        """The pivot's token id in ``mlm``'s vocabulary (None: the mask token), the pivot written as a token id or
        a token string of the model's vocabulary."""
        pivot = self.pivot
        if pivot is None or pivot.lower() in MASK_NAMES:
            return None
        if pivot.lstrip("-").isdigit():
            return int(pivot)
        from ..models.reader import reader_of

        tok = reader_of(mlm).tokenizer
        table = getattr(tok, "token_to_id", None)
        if table is not None and pivot in table:
            return table[pivot]
        hf = getattr(tok, "hf", None)
        if hf is not None:
            i = hf.convert_tokens_to_ids(pivot)
            if i is not None and i != hf.unk_token_id:
                return int(i)
        raise MLMProbError(f"pivot {pivot!r} is not a token of this model's vocabulary (give a token or an id)")
