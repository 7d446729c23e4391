"""Infilling the gaps written in a stream of records (``[MASK]x5``, ``[MASK]`` / ``<mask>`` or ``_``), behind ``mlmprob
infill --input``. The unit (one row, one id) is a record's whole gap (``gaps="joint"``, the record's id) or each
contiguous run of masks (``gaps="each"``, id ``RECORD/gapK`` from the left, the other gaps left masked)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..errors import MLMProbError
from ..gaps import count_gaps, expand_gaps
from ..models.reader import name_of, reader_of
from ..models.spec import ModelJob, ModelSpec
from ..positions import token_numbers
from ..runtime.inputs import Record
from ..runtime.job import State
from .spec import GAP_MODES, InfillSpec

NO_GAP = "no gap; write it as [MASK]x5, <mask> or _____"


def mask_text(mlm) -> str:
    """How the model's tokenizer reads one masked token: ``_`` for residue tokenizers, else its mask token."""
    from ..models.tokenizers import ResidueTokenizer

    tok = reader_of(mlm).tokenizer
    return "_" if tok is None or isinstance(tok, ResidueTokenizer) or not hasattr(tok, "hf") else tok.hf.mask_token


def gap_runs(positions: Sequence[int]) -> list[list[int]]:
    """Sorted positions cut into runs of consecutive positions."""
    runs: list[list[int]] = []
    for p in positions:
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


@dataclass(frozen=True)
class GapUnit:
    """One gap to fill: ``id`` (the output row's), the ``record`` id and text, ``gap`` (1-based index of
    the contiguous gap, None for a record's joint gap), ``n_gaps`` of the record, and ``error`` when the
    text alone shows the record cannot be infilled."""

    id: str
    record: str
    seq: str
    gap: int | None = None
    n_gaps: int = 1
    error: str | None = None


def iter_gap_units(records: Iterable[Record], gaps: str = "joint") -> Iterator[GapUnit]:
    """The units of ``records`` (see the module docstring); a record with no gap or a bad gap gives one
    unit carrying the ``error`` (the job raises it, or skips it with ``skip_invalid``)."""
    if gaps not in GAP_MODES:
        raise MLMProbError(f"unknown gaps mode {gaps!r}; use one of {', '.join(GAP_MODES)}")
    for r in records:
        try:
            n = count_gaps(r.seq)
        except MLMProbError as e:
            yield GapUnit(r.id, r.id, r.seq, None, 0, str(e))
            continue
        if n == 0:
            yield GapUnit(r.id, r.id, r.seq, None, 0, NO_GAP)
        elif gaps == "joint":
            yield GapUnit(r.id, r.id, r.seq, None, n)
        else:
            for k in range(1, n + 1):
                yield GapUnit(f"{r.id}/gap{k}", r.id, r.seq, k, n)


@dataclass(eq=False)
class InfillState(State):
    """What one worker holds: the model's reader, the resolved pivot id and the mask text."""

    pivot: int | None
    mask_text: str


@dataclass(frozen=True)
class InfillJob(ModelJob):
    """Everything a worker needs to fill chunks of :class:`GapUnit` (picklable; loaded by
    :class:`~mlmprob.models.spec.ModelJob`). A row's ``positions`` are the gap's 1-based residue/word numbers
    (:func:`mlmprob.positions.token_numbers`: each ``_`` of the text is one), ``token_indices`` its token indices
    (0-based, special tokens counted: what ``infill(mlm, ids, positions)`` takes). List-valued fields are lists;
    a TSV writer writes them as JSON text (:func:`mlmprob.runtime.writers.tsv_cell`)."""

    spec: InfillSpec = InfillSpec()
    skip_invalid: bool = False

    def __post_init__(self):
        InfillSpec.check(self.spec)

    def prepare(self, mlm) -> InfillState:
        """Check the settings against a loaded model (a pivot outside its vocabulary: an error here)."""
        from .beam import make_correction

        if not reader_of(mlm).has_text:
            raise MLMProbError("infilling text needs a model with a tokenizer")
        pivot = self.spec.pivot_id(mlm)
        make_correction(mlm, self.spec.method, pivot)
        return InfillState(self.model_spec.reader(mlm), pivot, mask_text(mlm))

    def fill(self, state: InfillState, unit: GapUnit) -> dict:
        """The output row of one unit; :class:`MLMProbError` (without the record's name) if it has no valid gap."""
        from .beam import infill

        if unit.error:
            raise MLMProbError(unit.error)
        mlm = state.mlm
        enc = mlm.encode([expand_gaps(unit.seq, state.mask_text, mlm.max_length)])
        ids = enc.input_ids
        positions = (ids[0] == mlm.mask_id).nonzero(as_tuple=True)[0].tolist()
        if not positions:
            raise MLMProbError(NO_GAP)
        if unit.gap is not None:
            runs = gap_runs(positions)
            if len(runs) != unit.n_gaps:
                raise MLMProbError(
                    f"its {unit.n_gaps} gap(s) became {len(runs)} run(s) of mask tokens after "
                    "tokenization; use --gaps joint"
                )
            positions = runs[unit.gap - 1]
        cands = infill(mlm, ids, positions, self.spec)
        numbers = token_numbers(enc.word_ids[0], ids[0], mlm.mask_id)
        return {
            "id": unit.id,
            "record": unit.record,
            "gap": unit.gap,
            "length": len(positions),
            **self.spec.recorded(),
            "positions": [numbers[t] for t in positions],
            "token_indices": positions,
            "fills": [mlm.decode(list(c.tokens)) for c in cands],
            "scores": [c.score for c in cands],
            "tokens": [list(c.tokens) for c in cands],
        }

    def run(self, state: InfillState, units: Sequence[GapUnit]) -> tuple[list[dict], list[tuple[str, str]]]:
        """Fill one chunk: rows in input order and the ``(id, reason)`` of units skipped (``skip_invalid``)."""
        from ..errors import TokenizationError

        rows, skipped = [], []
        for u in units:
            try:
                rows.append(self.fill(state, u))
            except MLMProbError as e:
                why = str(e).replace("sequence 0 ", "", 1) if isinstance(e, TokenizationError) else str(e)
                if not self.skip_invalid:
                    raise MLMProbError(f"record {u.record!r}: {why} (--skip-invalid skips such records)") from None
                skipped.append((u.id, why))
        return rows, skipped


def infill_records(mlm, records: Iterable[Record], *, gaps: str = "joint", **options) -> Iterator[dict]:
    """Rows of every gap of ``records`` with an already loaded model, in input order (``options``: those of
    :class:`InfillJob` but ``model_spec``, whose ``dtype``, ``allow_pickle`` and ``batch_tokens`` may be given as
    keywords, and the fields of its ``spec`` as keywords, which change it)."""
    spec = options.pop("spec", InfillSpec())
    spec = spec.replace(**{k: options.pop(k) for k in list(options) if k in InfillSpec.__dataclass_fields__})
    loading = {k: options.pop(k) for k in ("dtype", "allow_pickle", "batch_tokens") if k in options}
    job = InfillJob(model_spec=ModelSpec(name_of(mlm), **loading), spec=spec, **options)
    state = job.prepare(mlm)
    for u in iter_gap_units(records, gaps):
        yield from job.run(state, [u])[0]
