"""The picklable job of ``mlmprob score --pll one-pass`` (one process, workers or Ray actors alike)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..data import Record
from ..errors import MLMProbError
from ..onepass.scoring import one_pass_rows
from ..scoring import ScoreJob


@dataclass(frozen=True)
class OnePassScoreJob(ScoreJob):
    """:class:`~mlmprob.scoring.ScoreJob` (same loading) whose rows are one-pass estimates; ``correction``:
    a file to use instead of the one found for the model."""

    correction: str | None = None

    def run(self, mlm, records: Sequence[Record]) -> tuple[list[dict], list[tuple[str, str]]]:
        if self.per_token or self.whole_word:
            raise MLMProbError("--pll one-pass gives per-sequence scores only (no --per-token, no --whole-word)")
        skipped: list[tuple[str, str]] = []
        rows = one_pass_rows(mlm, records, skip_invalid=self.skip_invalid, skipped=skipped, correction=self.correction)
        return rows, skipped
