"""Scoring many text records with a tokenizer-carrying MaskedLM: the API behind ``mlmprob score``.
:class:`ScoreJob` (and :class:`~mlmprob.onepass.job.OnePassScoreJob`) hold a :class:`ScoreSpec` as ``spec``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice

from .data import Record, encodable_records, encode_records
from .energies import token_scores
from .errors import MLMProbError, NonFiniteError
from .likelihood.spec import ScoreSpec
from .models.protocol import NONFINITE_HINT
from .models.reader import reader_of
from .models.spec import ModelJob
from .runtime.job import State


@dataclass(frozen=True)
class SequenceScore:
    """Scores of one sequence (``pll`` = -E_local, ``e_raw`` the raw-logit energy); per-token lists when asked."""

    id: str
    sequence: str
    n_tokens: int
    pll: float
    pll_per_token: float
    e_local: float
    e_raw: float
    tokens: list[str] = field(default_factory=list)
    token_log_prob: list[float] = field(default_factory=list)
    token_raw: list[float] = field(default_factory=list)

    def to_dict(self, per_token: bool) -> dict:
        d = asdict(self)
        return d if per_token else {k: v for k, v in d.items() if k not in ("tokens", "token_log_prob", "token_raw")}


def score_records(
    mlm,
    records: Iterable[Record],
    *,
    whole_word: bool = False,
    per_token: bool = False,
    chunk_size: int = 16,
    skip_invalid: bool = False,
    on_skip: Callable[[Record, str], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[SequenceScore]:
    """Yield a ``SequenceScore`` per record, scoring ``chunk_size`` records per call (results come as they are
    ready). ``whole_word`` uses the whole-word l2r PLL. ``skip_invalid`` skips records the tokenizer rejects
    (reported through ``on_skip``) instead of raising. NaN or infinite logits (or an infinite score) stop the run
    with ``NonFiniteError`` naming the record ids."""
    if not reader_of(mlm).has_text:
        raise MLMProbError("this model has no tokenizer; score token ids with mlmprob.token_scores instead")

    def flush(buf: list[Record]) -> list[SequenceScore]:
        good = encodable_records(mlm, buf, on_skip) if skip_invalid else buf
        if not good:
            return []
        enc = encode_records(mlm, good)
        try:
            s = token_scores(mlm, enc.input_ids, word_ids=enc.word_ids if whole_word else None)
        except NonFiniteError as e:
            rows = [b for b in e.rows if 0 <= b < len(good)]
            named = ", ".join(repr(good[b].id) for b in rows) or ", ".join(repr(r.id) for r in good)
            why = f"the model returned NaN or infinite logits ({NONFINITE_HINT})"
            raise NonFiniteError(f"record(s) {named}: {why}", rows=rows) from None
        out = []
        plls, e_raws = s.pll.tolist(), s.e_raw.tolist()
        for b, r in enumerate(good):
            sel, p = s.positions[b], plls[b]
            n = int(sel.sum())
            if not (math.isfinite(p) and math.isfinite(e_raws[b])):
                raise NonFiniteError(
                    f"record {r.id!r}: its score is not finite (PLL {p}; a token with zero "
                    f"probability, or {NONFINITE_HINT})",
                    rows=[b],
                )
            row = dict(id=r.id, sequence=r.seq, n_tokens=n, pll=p, pll_per_token=p / n, e_local=-p, e_raw=e_raws[b])
            if per_token:
                row.update(tokens=[mlm.decode([i]) for i in enc.input_ids[b][sel].tolist()])
                row.update(token_log_prob=s.log_prob[b][sel].tolist(), token_raw=s.raw[b][sel].tolist())
            out.append(SequenceScore(**row))
        return out

    records = iter(records)
    while buf := list(islice(records, chunk_size)):
        yield from flush(buf)
        if progress:
            progress(len(buf))


@dataclass(frozen=True)
class ScoreJob(ModelJob):
    """Everything a worker process needs to score chunks of records with the settings ``spec`` (picklable: one
    process, one per device, or Ray actors); its state is the model's reader alone. A one-pass ``spec`` runs in
    :class:`~mlmprob.onepass.job.OnePassScoreJob`."""

    spec: ScoreSpec = ScoreSpec()
    skip_invalid: bool = False

    def __post_init__(self):
        ScoreSpec.check(self.spec)
        if self.spec.one_pass and type(self) is ScoreJob:
            raise MLMProbError("a one-pass spec (pll='one-pass') runs in mlmprob.onepass.job.OnePassScoreJob")

    def run(self, state: State, records: Sequence[Record]) -> tuple[list[dict], list[tuple[str, str]]]:
        """Score one chunk: result rows (dicts, in input order) and the ``(id, reason)`` of skipped records."""
        mlm, spec = state.mlm, self.spec
        skipped: list[tuple[str, str]] = []
        how: dict = dict(whole_word=spec.whole_word, per_token=spec.per_token, skip_invalid=self.skip_invalid)
        scores = score_records(
            mlm, records, chunk_size=max(len(records), 1), on_skip=lambda r, why: skipped.append((r.id, why)), **how
        )
        rows = [s.to_dict(spec.per_token) for s in scores]
        if spec.loglik:
            rows = self._with_loglik(mlm, rows, skipped)
        return rows, skipped

    def _with_loglik(self, mlm, rows: list[dict], skipped: list[tuple[str, str]]) -> list[dict]:
        from .likelihood.records import loglik_columns

        spec, out = self.spec, []
        for row in rows:
            try:
                row.update(loglik_columns(mlm, row["sequence"], spec.loglik_spec, whole_word=spec.whole_word))
            except MLMProbError as e:
                if not self.skip_invalid or isinstance(e, NonFiniteError):
                    raise type(e)(f"record {row['id']!r}: {e}") from None
                skipped.append((row["id"], str(e)))
                continue
            out.append(row)
        return out
