"""The streamed job of ``mlmprob score --pll one-pass``: :class:`mlmprob.scoring.ScoreJob`'s loading and
options, with one-pass estimates (:func:`mlmprob.onepass.scoring.one_pass_rows`) as its rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..data import Record
from ..errors import MLMProbError
from ..runtime.job import State
from ..scoring import ScoreJob


@dataclass(frozen=True)
class OnePassScoreJob(ScoreJob):
    """:class:`ScoreJob` (same loading) whose rows are one-pass estimates (``mlmprob score --pll one-pass``);
    ``correction``: a file to use instead of the one found for the model."""

    correction: str | None = None

    def run(self, state: State, records: Sequence[Record]) -> tuple[list[dict], list[tuple[str, str]]]:
        from .scoring import one_pass_rows

        if self.per_token or self.whole_word:
            raise MLMProbError("--pll one-pass gives per-sequence scores only (no --per-token, no --whole-word)")
        skipped: list[tuple[str, str]] = []
        rows = one_pass_rows(state.mlm, records, skip_invalid=self.skip_invalid, skipped=skipped,
                             correction=self.correction)
        return rows, skipped
