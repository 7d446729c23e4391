"""The settings of ``mlmprob.pll`` (:class:`PLLSpec`: exact, or a one-pass estimate) and of the one-pass estimate
itself (:class:`OnePassSpec`, what :func:`~mlmprob.onepass.estimate.one_pass_token_scores` takes). No torch here."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..errors import MLMProbError
from ..settings import Spec

METHODS = ("exact", "one_pass", "unmasked")


@dataclass(frozen=True)
class PLLSpec(Spec):
    """``method``: ``"exact"`` (one masked copy per position), ``"one_pass"`` (one unmasked pass with the model's
    fitted correction, or ``correction``: a :class:`~mlmprob.onepass.correction.Correction` or a file) or
    ``"unmasked"`` (the unmasked pass as is)."""

    method: str = "exact"
    correction: Any = None

    def __post_init__(self):
        if self.method not in METHODS:
            raise MLMProbError(f"unknown PLL method {self.method!r}; use one of {', '.join(METHODS)}")
        c = self.correction
        if c is not None and not isinstance(c, (str, os.PathLike)):
            from .correction import Correction  # only here: a path or None imports no torch

            if not isinstance(c, Correction):  # 3 or True was pathlib's "expected str, bytes or os.PathLike object"
                raise MLMProbError(
                    f"correction must be a Correction, a file path or None (the model's own), got "
                    f"{type(c).__name__} {c!r:.40}"
                )
        if self.correction is not None and self.method != "one_pass":
            raise MLMProbError(
                f"correction is the one-pass correction: use it with method='one_pass', not {self.method!r}"
            )


@dataclass(frozen=True)
class OnePassSpec(PLLSpec):
    """:class:`PLLSpec` of the one-pass estimates only (``"one_pass"``, the default, or ``"unmasked"``)."""

    method: str = "one_pass"

    def __post_init__(self):
        if self.method not in METHODS[1:]:
            raise MLMProbError(f"one-pass method must be 'one_pass' or 'unmasked', got {self.method!r}")
        super().__post_init__()
