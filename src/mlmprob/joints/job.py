"""The pairwise-joint experiment (Torroba Hennigen & Kim 2023, sec. 3): pairs over a data set, every construction
and metric per pair, a resumable record file, the report and the token-distance plot.

Pairs are planned from the seed alone: for scheme ``s`` a seeded permutation of the data set, pair ``i`` drawn
from a generator seeded by ``(seed, s, i)`` (a sequence without a valid pair passes the draw on): ``random`` (two
distinct scored positions) or ``contiguous`` (``(t, t + 1)``). The unit is a pair, id ``f"{scheme}/{i}"``; pair
``k`` of the full list is pair ``k // S`` of scheme ``k % S``, so its place does not depend on ``n_pairs``. Records
go to ``OUT/pairs.jsonl`` through the streaming runner (:func:`mlmprob.runtime.command.run_command`); workers plan
the pairs themselves, so only pair numbers travel."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import islice
from pathlib import Path
from typing import NamedTuple

import torch

from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from ..models.reader import name_of, reader_of
from ..models.spec import ModelJob, ModelSpec
from ..models.tokenizers import Encoding
from ..positions import TOKENS, default_mask, token_numbers
from ..runtime.command import RunOptions
from ..runtime.job import State
from ..runtime.seeds import seeded_generator
from .evaluate import PairSpec, evaluate_pair
from .records import POSITIONS_BASE, RECORDS_FILE, _dtype_label, check_records, load_records
from .spec import DEFAULT_COLUMN, JointsSpec

NA_VALUES = ("na", "nan", "none")


def read_sequences(
    path: str | Path, column: str | None = None, max_sequences: int | None = None, fmt: str = "auto"
) -> list[str]:
    """The sequences of a data file (text, FASTA, CSV/TSV column, JSONL, Parquet; see
    :func:`~mlmprob.runtime.inputs.iter_records`), without empty and NA cells, the first ``max_sequences``; a
    CSV/TSV file's column is ``HC`` unless ``column`` names another."""
    from ..runtime.inputs import detect_format, iter_records

    kind = detect_format(path) if fmt == "auto" else fmt
    if kind in ("csv", "tsv") and column is None:
        column = DEFAULT_COLUMN
    given = (r.seq for r in iter_records(path, fmt, column if kind not in ("text", "fasta") else None))
    seqs = list(islice((s for s in given if s and s.lower() not in NA_VALUES), max_sequences))
    if not seqs:
        raise MLMProbError(f"no sequences in {path}" + (f" column {column!r}" if kind in ("csv", "tsv") else ""))
    return seqs


@dataclass(frozen=True)
class PlannedPair:
    """Pair ``i`` of ``scheme``: token indices ``a``, ``b`` of ``input_ids`` (what :func:`evaluate_pair` takes)
    and ``numbers``, their 1-based residue/word numbers (:func:`mlmprob.positions.token_numbers`)."""

    scheme: str
    i: int
    seq_index: int
    input_ids: torch.Tensor  # [L]
    a: int
    b: int
    numbers: tuple[int, int]


def draw_pair(positions: torch.Tensor, scheme: str, generator: torch.Generator) -> tuple[int, int] | None:
    """Positions ``(a, b)``, ``a < b``, from the scored ``positions`` (bool ``[L]``), or None if the
    sequence has no such pair."""
    idx = positions.nonzero(as_tuple=True)[0]
    if scheme == "random":
        if len(idx) < 2:
            return None
        pick = torch.randperm(len(idx), generator=generator)[:2]
        a, b = sorted(int(idx[j]) for j in pick)
        return a, b
    left = idx[positions[(idx + 1).clamp(max=len(positions) - 1)] & (idx + 1 < len(positions))]
    if len(left) == 0:
        return None
    t = int(left[torch.randint(len(left), (1,), generator=generator)])
    return t, t + 1


class PairPlanner:
    """The deterministic pairs of each scheme, drawn lazily and remembered: ``pair(s, i)`` is pair ``i``
    of scheme ``spec.schemes[s]`` (every process that asks gets the same pair)."""

    def __init__(self, mlm: MaskedLM, sequences: Sequence[str], spec: JointsSpec):
        if not reader_of(mlm).has_text:
            raise MLMProbError(
                "the runner needs a model with a tokenizer (encode); use pairwise_joint directly otherwise"
            )
        self.mlm, self.sequences, self.spec = mlm, sequences, spec
        self._order = [
            torch.randperm(len(sequences), generator=torch.Generator().manual_seed(spec.seed * 7919 + k))
            for k in range(len(spec.schemes))
        ]
        self._next = [0] * len(spec.schemes)  # next position in the permutation
        self._found: list[list[tuple[int, int, int]]] = [[] for _ in spec.schemes]  # (seq_index, a, b)
        self._unusable: dict[int, str] = {}  # sequence index -> why it cannot be encoded

    def _encode(self, s: int) -> Encoding | None:
        try:
            return self.mlm.encode([self.sequences[s]])  # type: ignore[attr-defined]  # a loaded model encodes
        except MLMProbError as e:  # e.g. too long for the model, or symbols outside its alphabet
            self._unusable.setdefault(s, str(e).removeprefix("sequence 0 "))
            return None

    def pair(self, k: int, i: int) -> PlannedPair:
        scheme, order, found = self.spec.schemes[k], self._order[k], self._found[k]
        while len(found) <= i:
            n = len(found)
            while True:
                j = self._next[k]
                if j >= len(order) * 2 and n == 0:  # every sequence tried twice over: none has a pair
                    bad = self._unusable
                    raise MLMProbError(
                        f"sequence {min(bad) + 1} {bad[min(bad)]}: {len(bad)} of {len(self.sequences)} sequences "
                        f"cannot be encoded for this model, and no other admits a {scheme} pair"
                        if bad
                        else f"no sequence admits a {scheme} pair"
                    )
                self._next[k] += 1
                s = int(order[j % len(order)])
                enc = self._encode(s)
                if enc is None:
                    continue
                g = seeded_generator(self.spec.seed, "pair", k, n)
                ab = draw_pair(default_mask(self.mlm, enc.input_ids, TOKENS)[0], scheme, g)
                if ab is not None:
                    found.append((s, *ab))
                    break
        s, a, b = found[i]
        enc = self._encode(s)
        assert enc is not None  # the pair was drawn from this encoding
        numbers = token_numbers(enc.word_ids[0], enc.input_ids[0], self.mlm.mask_id)
        return PlannedPair(scheme, i, s, enc.input_ids[0], a, b, (numbers[a], numbers[b]))


class PairUnit(NamedTuple):
    """Pair ``i`` of scheme number ``s`` (``k = i * S + s`` in the full list); ``id`` names its record."""

    id: str
    s: int
    i: int


def pair_units(schemes: Sequence[str], n_pairs: int) -> Iterator[PairUnit]:
    """The full pair list: the schemes interleaved, pair by pair."""
    for i in range(n_pairs):
        for s, scheme in enumerate(schemes):
            yield PairUnit(f"{scheme}/{i}", s, i)


def pair_ids(schemes: Sequence[str], n_pairs: int) -> Iterator[str]:
    """The ids of the full pair list (what ``mlmprob merge`` expects of joined shards)."""
    return (u.id for u in pair_units(schemes, n_pairs))


@dataclass(eq=False)
class JointsWorker(State):
    """What one process holds: the model's reader, its pair planner and the settings of each pair."""

    planner: PairPlanner
    pair: PairSpec


@dataclass(frozen=True)
class JointsJob(ModelJob):
    """Everything a worker process needs to compute pair records (picklable; see ``runtime.engine``; loaded
    by :class:`~mlmprob.models.spec.ModelJob`): the settings ``spec`` (its column settled for the data:
    :meth:`~mlmprob.joints.spec.JointsSpec.reading`) and the input, ``data``, the sequence file as the record file
    names it (``-``: standard input), read from ``data_path`` when given (standard input's copy)."""

    spec: JointsSpec = JointsSpec()
    data: str = field(kw_only=True)
    data_path: str | None = field(default=None, kw_only=True)

    def __post_init__(self):
        object.__setattr__(self, "spec", JointsSpec.check(self.spec).reading(self.data))

    def prepare(self, mlm: MaskedLM) -> JointsWorker:
        """The worker state around a loaded model: its reader with the run's budget and the pair planner."""
        c = self.spec
        mlm = self.model_spec.reader(mlm)
        pivot = None
        if c.pivot == "mask":
            if not 0 <= mlm.mask_id < mlm.vocab_size:
                raise MLMProbError("pivot 'mask' needs a model whose output vocabulary has the mask token")
            pivot = (mlm.mask_id, mlm.mask_id)
        planner = PairPlanner(mlm, read_sequences(self.data_path or self.data, c.column, c.max_sequences, c.format), c)
        return JointsWorker(mlm, planner, PairSpec(c.top_k, pivot, c.ag_steps, c.ag_tol, c.ag_max_steps))

    def record(self, w: JointsWorker, unit: PairUnit) -> dict:
        """The record of one pair: its place (``a``, ``b``: the 1-based residue/word numbers of its positions, as
        ``--positions`` and the app count; ``a_token_index``, ``b_token_index``: their token indices, 0-based, special
        tokens counted; ``distance``: the tokens between them), every joint's metrics and diagnostics, and its time."""
        pp = w.planner.pair(unit.s, unit.i)
        t0 = time.perf_counter()
        ev = evaluate_pair(w.mlm, pp.input_ids, pp.a, pp.b, w.pair)
        return {
            "id": unit.id,
            "kind": "pair",
            "scheme": pp.scheme,
            "i": pp.i,
            "seq_index": pp.seq_index,
            "length": int(len(pp.input_ids)),
            "distance": abs(pp.b - pp.a) - 1,
            "a": pp.numbers[0],
            "b": pp.numbers[1],
            **ev.record(),
            "seconds": time.perf_counter() - t0,
        }

    def run(self, w: JointsWorker, units: Sequence[PairUnit]) -> tuple[list[dict], list[tuple[str, str]]]:
        return [self.record(w, u) for u in units], []


def _each(progress: Callable[[dict], None], rows: list[dict]) -> None:
    """``progress`` called on each row of a written chunk."""
    for r in rows:
        progress(r)


def run_joints(
    mlm: MaskedLM | None,
    data: str | Path,
    run: RunOptions,
    spec: JointsSpec | None = None,
    *,
    model_spec: ModelSpec | None = None,
    progress: Callable[[dict], None] | None = None,
    **overrides,
) -> list[dict]:
    """Compute the missing pair records of ``run.shard`` over the sequences of the file ``data`` (text, FASTA,
    CSV/TSV, JSONL, Parquet: :func:`read_sequences`) into ``run.out/pairs.jsonl``; returns all records of the
    configuration there (first ``n_pairs`` per scheme), in scheme then pair order. The settings: ``spec``, a
    :class:`~mlmprob.joints.spec.JointsSpec`, its fields overridden by keyword; where and how it runs: ``run``, a
    :class:`~mlmprob.runtime.command.RunOptions` whose ``out`` is the output folder (the record file ``pairs.jsonl``
    and its meta; always resumed); ``progress``, called with every new record in pair order.

    ``mlm`` (a loaded model) runs the pairs in this process; with ``mlm=None``, or several ``run.devices``, or
    ``run.engine="ray"``, every worker loads ``model_spec`` (:class:`~mlmprob.models.spec.ModelSpec`: the model,
    its dtype, ...; default: ``mlm``'s name) on its device."""
    spec = JointsSpec.of(spec, **overrides)
    if model_spec is None and mlm is None:
        raise MLMProbError("run_joints needs model_spec= (the model each worker loads) or a loaded model")
    job = JointsJob(spec, model_spec=model_spec or ModelSpec(name_of(mlm)), data=str(data))
    return run_pairs(job, run, mlm, progress)


def run_pairs(
    job: JointsJob, run: RunOptions, mlm: MaskedLM | None = None, progress: Callable[[dict], None] | None = None
) -> list[dict]:
    """:func:`run_joints` of a job (the CLI's: its data read from ``job.data_path``)."""
    from ..runtime.command import StreamCommand, run_command, stored_config

    if not isinstance(run, RunOptions) or run.out is None:
        raise MLMProbError(f"run must be a RunOptions naming its out folder (where and how to run), got {run!r}")
    spec = job.spec
    read_sequences(job.data_path or job.data, spec.column, spec.max_sequences, spec.format)  # bad data: fail first
    out = Path(run.out)
    out.mkdir(parents=True, exist_ok=True)
    opts = replace(run, out=str(out / RECORDS_FILE), resume=True)
    ms = job.model_spec
    dtype = _dtype_label(mlm if opts.in_process else None, ms.dtype, opts.devices[0], ms.model)
    after = {**POSITIONS_BASE, "dtype": dtype, "shard": str(opts.shard)}
    stored = check_records(out, stored_config("joints", ms, spec, {"data": job.data}, after))
    run_command(
        StreamCommand(
            job,
            lambda: pair_units(spec.schemes, spec.n_pairs),
            stored,
            unit_name="pair",
            chunk_size=1,
            meta={"limit": spec.n_pairs},
            on_rows=None if progress is None else partial(_each, progress),
            state=job.prepare(mlm) if mlm is not None and opts.in_process else None,
        ),
        opts,
    )
    keep = {(s, i) for s in spec.schemes for i in range(spec.n_pairs)}
    _, records = load_records(out / RECORDS_FILE)
    return sorted(
        (r for r in records if (r["scheme"], r["i"]) in keep), key=lambda r: (spec.schemes.index(r["scheme"]), r["i"])
    )
