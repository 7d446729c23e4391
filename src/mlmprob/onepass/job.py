"""The streamed job of ``mlmprob score --pll one-pass``: :class:`mlmprob.scoring.ScoreJob`'s loading and
options, with one-pass estimates (:func:`mlmprob.onepass.scoring.one_pass_rows`) as its rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..data import Record
from ..errors import MLMProbError
from ..runtime.job import State
from ..scoring import ScoreJob, ScoreSpec


@dataclass(frozen=True)
class OnePassScoreJob(ScoreJob):
    """:class:`ScoreJob` (same loading) whose rows are one-pass estimates (``mlmprob score --pll one-pass``): its
    ``spec`` has ``pll="one-pass"`` (which refuses per-token and whole-word scores) and ``spec.correction``, a file to
    use instead of the one found for the model."""

    spec: ScoreSpec = ScoreSpec(pll="one-pass")

    def __post_init__(self):
        super().__post_init__()
        if not self.spec.one_pass:
            raise MLMProbError(f"OnePassScoreJob needs a spec with pll='one-pass', got pll={self.spec.pll!r}")

    def run(self, state: State, records: Sequence[Record]) -> tuple[list[dict], list[tuple[str, str]]]:
        from .scoring import one_pass_rows

        skipped: list[tuple[str, str]] = []
        rows = one_pass_rows(
            state.mlm, records, skip_invalid=self.skip_invalid, skipped=skipped, correction=self.spec.correction
        )
        return rows, skipped
