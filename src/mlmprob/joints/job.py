"""The pairwise-joint experiment (Torroba Hennigen & Kim 2023, sec. 3): pairs over a data set,
every construction and metric per pair, a resumable result file of per-pair records, a Table-1-shaped
report and the token-distance plot of App. E.

Pairs are planned deterministically from the seed: for scheme ``s`` the sequences are a seeded
permutation of the data set, and pair ``i`` draws its positions from a generator seeded by
``(seed, s, i)`` (a sequence without a valid pair, or one the model cannot encode, passes the draw
on to the next sequence of the permutation).

- ``random``: two distinct scored positions, uniformly at random;
- ``contiguous``: ``(t, t + 1)`` with ``t`` uniform among positions whose right neighbour is scored.

The unit of work is a pair, id ``f"{scheme}/{i}"``. The full pair list interleaves the schemes:
pair ``k`` is pair ``i = k // S`` of scheme ``k % S`` (``S`` schemes), so a pair's place does not
depend on ``n_pairs`` and ``--shard I/N`` takes the pairs with ``k % N == I - 1``. Records go to
``OUT/pairs.jsonl`` through :func:`mlmprob.runtime.writers.open_writer` (one writer at a time, the
configuration in ``OUT/pairs.jsonl.meta.json``, ``limit`` = pairs per scheme there); a rerun with the
same configuration, a larger ``n_pairs`` included, computes only the missing pairs (the streaming runner,
:func:`mlmprob.runtime.command.run_command`, does shards, workers, Ray, resume and progress). Worker processes
(one per device) plan the pairs themselves, so only pair numbers travel.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, NamedTuple, Sequence

import torch

from ..defaults import DTYPE
from ..errors import MLMProbError
from ..models.protocol import MaskedLM
from ..positions import TOKENS, default_mask
from ..runtime.seeds import seeded_generator
from ..runtime.shard import Shard
from .evaluate import AGOptions, evaluate_pair
from .records import RECORDS_FILE, _dtype_label, check_records, load_records, restore_nonfinite  # noqa: F401
from .report import (METHOD_LABELS, PLOT_FILE, REPORT_FILE, SUMMARY_FILE, diagnostics, format_report,  # noqa: F401
                     summarize_records, write_report)
from ..models.reader import reader_of

SCHEMES = ("random", "contiguous")
NA_VALUES = ("na", "nan", "none")
DEFAULT_COLUMN = "HC"   # the sequence column of a CSV/TSV data file when none is named


@dataclass(frozen=True)
class JointsConfig:
    """One experiment. ``pivot`` is ``"mode"`` (the paper's default) or ``"mask"``; ``top_k`` None
    uses the full candidate vocabulary (the model's proposal ids, else its whole vocabulary).
    ``data`` is read by :func:`mlmprob.runtime.inputs.iter_records` in ``format``; ``column`` names the
    sequence column of a CSV/TSV file (``HC`` when None) or the key of JSONL/Parquet records (their
    default when None); it is set to None for text and FASTA files, which have no columns.

    >>> JointsConfig("m", "a.csv").column, JointsConfig("m", "a.fasta", column="x").column
    ('HC', None)
    """

    model: str
    data: str
    column: str | None = None
    schemes: tuple[str, ...] = SCHEMES
    n_pairs: int = 500
    seed: int = 0
    top_k: int | None = None
    pivot: str = "mode"
    ag_steps: int | None = None
    ag_tol: float = 1e-10
    ag_max_steps: int = 5000
    max_sequences: int | None = None
    format: str = "auto"

    def __post_init__(self):
        from ..runtime.inputs import FORMATS

        if self.format not in FORMATS:
            raise MLMProbError(f"unknown data format {self.format!r}; use one of {', '.join(FORMATS)}")
        kind = self.data_format
        if kind in ("csv", "tsv") and self.column is None:
            object.__setattr__(self, "column", DEFAULT_COLUMN)
        elif kind in ("text", "fasta"):
            object.__setattr__(self, "column", None)
        bad = [s for s in self.schemes if s not in SCHEMES]
        if bad or not self.schemes:
            raise MLMProbError(f"unknown pair scheme(s) {bad or '(none)'}; use {', '.join(SCHEMES)}")
        if len(set(self.schemes)) != len(self.schemes):
            raise MLMProbError(f"pair schemes repeat: {', '.join(self.schemes)}")
        if self.n_pairs < 1:
            raise MLMProbError(f"n_pairs must be >= 1, got {self.n_pairs}")
        if self.pivot not in ("mode", "mask"):
            raise MLMProbError(f"pivot must be 'mode' or 'mask', got {self.pivot!r}")
        if self.top_k is not None and self.top_k < 1:
            raise MLMProbError(f"top_k must be >= 1, got {self.top_k}")
        if self.max_sequences is not None and self.max_sequences < 1:
            raise MLMProbError(f"max_sequences must be >= 1, got {self.max_sequences}")

    @property
    def data_format(self) -> str:
        """The format ``data`` is read in (``format``, or the one its suffix names)."""
        from ..runtime.inputs import detect_format

        return detect_format(self.data) if self.format == "auto" else self.format

    def identity(self) -> dict:
        """The fields that must match to resume a record file (everything but ``n_pairs``)."""
        d = dataclasses.asdict(self)
        d.pop("n_pairs")
        d["schemes"] = list(d["schemes"])
        return d


# -- data and pair plan -----------------------------------------------------------------------------
def read_sequences(path: str | Path, column: str | None = None, max_sequences: int | None = None,
                   fmt: str = "auto") -> list[str]:
    """The sequences of a data file (text, FASTA, CSV/TSV column, JSONL, Parquet; see
    :func:`~mlmprob.runtime.inputs.iter_records`), without empty and NA cells, the first ``max_sequences``; a
    CSV/TSV file's column is ``HC`` unless ``column`` names another."""
    from itertools import islice

    from ..runtime.inputs import detect_format, iter_records

    kind = detect_format(path) if fmt == "auto" else fmt
    if kind in ("csv", "tsv") and column is None:
        column = DEFAULT_COLUMN
    seqs = (r.seq for r in iter_records(path, fmt, column if kind not in ("text", "fasta") else None))
    seqs = list(islice((s for s in seqs if s and s.lower() not in NA_VALUES), max_sequences))
    if not seqs:
        raise MLMProbError(f"no sequences in {path}" + (f" column {column!r}" if kind in ("csv", "tsv") else ""))
    return seqs


@dataclass(frozen=True)
class PlannedPair:
    scheme: str
    i: int
    seq_index: int
    input_ids: torch.Tensor   # [L]
    a: int
    b: int


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
    of scheme ``config.schemes[s]`` (every process that asks gets the same pair)."""

    def __init__(self, mlm: MaskedLM, sequences: Sequence[str], config: JointsConfig):
        if not reader_of(mlm).has_text:
            raise MLMProbError("the runner needs a model with a tokenizer (encode); use pairwise_joint directly otherwise")
        self.mlm, self.sequences, self.config = mlm, sequences, config
        self._order = [torch.randperm(len(sequences), generator=torch.Generator().manual_seed(config.seed * 7919 + k))
                       for k in range(len(config.schemes))]
        self._next = [0] * len(config.schemes)                    # next position in the permutation
        self._found: list[list[tuple[int, int, int]]] = [[] for _ in config.schemes]   # (seq_index, a, b)
        self._unusable: dict[int, str] = {}    # sequence index -> why it cannot be encoded

    def _encode(self, s: int) -> torch.Tensor | None:
        try:
            return self.mlm.encode([self.sequences[s]]).input_ids[0]
        except MLMProbError as e:   # e.g. too long for the model, or symbols outside its alphabet
            self._unusable.setdefault(s, str(e).removeprefix("sequence 0 "))
            return None

    def _none_admits(self, scheme: str) -> MLMProbError:
        bad = self._unusable
        if not bad:
            return MLMProbError(f"no sequence admits a {scheme} pair")
        s = min(bad)
        return MLMProbError(f"sequence {s + 1} {bad[s]}: {len(bad)} of {len(self.sequences)} sequences cannot be "
                            f"encoded for this model, and no other admits a {scheme} pair")

    def pair(self, k: int, i: int) -> PlannedPair:
        scheme, order, found = self.config.schemes[k], self._order[k], self._found[k]
        while len(found) <= i:
            n = len(found)
            while True:
                j = self._next[k]
                if j >= len(order) * 2 and n == 0:
                    raise self._none_admits(scheme)
                self._next[k] += 1
                s = int(order[j % len(order)])
                ids = self._encode(s)
                if ids is None:
                    continue
                g = seeded_generator(self.config.seed, "pair", k, n)
                ab = draw_pair(default_mask(self.mlm, ids[None], TOKENS)[0], scheme, g)
                if ab is not None:
                    found.append((s, *ab))
                    break
        s, a, b = found[i]
        return PlannedPair(scheme, i, s, self._encode(s), a, b)


class PairUnit(NamedTuple):
    """Pair ``i`` of scheme number ``s`` (``k = i * S + s`` in the full list); ``id`` names its record."""

    id: str
    s: int
    i: int


def pair_units(schemes: Sequence[str], n_pairs: int) -> Iterator[PairUnit]:
    """The full pair list: the schemes interleaved, pair by pair.

    >>> [u.id for u in pair_units(("random", "contiguous"), 2)]
    ['random/0', 'contiguous/0', 'random/1', 'contiguous/1']
    """
    for i in range(n_pairs):
        for s, scheme in enumerate(schemes):
            yield PairUnit(f"{scheme}/{i}", s, i)


def pair_ids(schemes: Sequence[str], n_pairs: int) -> Iterator[str]:
    """The ids of the full pair list (what ``mlmprob merge`` expects of joined shards)."""
    return (u.id for u in pair_units(schemes, n_pairs))


# -- the work of one process ----------------------------------------------------------------------------
class JointsWorker(NamedTuple):
    """What one process holds: the model, its pair planner, the HCB pivot, AG options and the batch budget."""

    mlm: MaskedLM
    planner: PairPlanner
    pivot: tuple[int, int] | None
    ag: AGOptions
    batch_tokens: int


@dataclass(frozen=True)
class JointsJob:
    """Everything a worker process needs to compute pair records (picklable; see ``runtime.engine``)."""

    config: JointsConfig
    dtype: str | None = DTYPE  # mlmprob.defaults: the CLI's and load_mlm's default
    allow_pickle: bool = False
    batch_tokens: int | None = None

    def load(self, device: str = "auto") -> JointsWorker:
        """``config.model`` on ``device`` (called once per worker)."""
        from ..models import load_mlm

        return self.prepare(load_mlm(self.config.model, device=device, dtype=self.dtype, allow_pickle=self.allow_pickle))

    def prepare(self, mlm: MaskedLM) -> JointsWorker:
        from ..batching import auto_batch_tokens

        c = self.config
        budget = auto_batch_tokens(mlm, self.batch_tokens)
        mlm = reader_of(mlm, budget)
        pivot = None
        if c.pivot == "mask":
            if not 0 <= mlm.mask_id < mlm.vocab_size:
                raise MLMProbError("pivot 'mask' needs a model whose output vocabulary has the mask token")
            pivot = (mlm.mask_id, mlm.mask_id)
        planner = PairPlanner(mlm, read_sequences(c.data, c.column, c.max_sequences, c.format), c)
        return JointsWorker(mlm, planner, pivot, AGOptions(c.ag_steps, c.ag_tol, c.ag_max_steps), budget)

    def record(self, w: JointsWorker, unit: PairUnit) -> dict:
        """The record of one pair: its place, every joint's metrics and diagnostics, and its time."""
        pp = w.planner.pair(unit.s, unit.i)
        t0 = time.perf_counter()
        ev = evaluate_pair(w.mlm, pp.input_ids, pp.a, pp.b, top_k=self.config.top_k, pivot=w.pivot, ag=w.ag)
        return {"id": unit.id, "kind": "pair", "scheme": pp.scheme, "i": pp.i, "seq_index": pp.seq_index,
                "length": int(len(pp.input_ids)), "distance": abs(pp.b - pp.a) - 1, **ev.record(),
                "seconds": time.perf_counter() - t0}

    def run(self, w: JointsWorker, units: Sequence[PairUnit]) -> tuple[list[dict], list]:
        return [self.record(w, u) for u in units], []


def run_joints(mlm: MaskedLM | None, config: JointsConfig, out_dir: str | Path, *,
               batch_tokens: int | None = None, progress: Callable[[dict], None] | None = None,
               shard: Shard = Shard.whole(), devices: Sequence[str] | None = None, dtype: str | None = None,
               engine: str = "local", ray_address: str | None = None, show_progress: bool = False,
               allow_pickle: bool = False) -> list[dict]:
    """Compute the missing pair records of ``shard`` into ``out_dir/pairs.jsonl``; returns all records of
    the configuration there (first ``n_pairs`` per scheme), in scheme then pair order.

    ``mlm`` (a loaded model) runs the pairs in this process; with ``mlm=None``, or several ``devices``, or
    ``engine="ray"``, every worker loads ``config.model`` on its device in ``dtype``. ``progress`` is
    called with every new record, in pair order."""
    from ..runtime.command import RunOptions, StreamCommand, run_command

    read_sequences(config.data, config.column, config.max_sequences, config.format)  # bad data: fail before anything
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    opts = RunOptions(out=str(out / RECORDS_FILE), resume=True, shard=shard, devices=tuple(devices or ["auto"]),
                      engine=engine, ray_address=ray_address, progress=show_progress, dtype=dtype)
    stored = check_records(out, config, shard, _dtype_label(mlm if opts.in_process else None, dtype, opts.devices[0],
                                                          config.model))
    job = JointsJob(config, dtype=dtype, batch_tokens=batch_tokens, allow_pickle=allow_pickle)
    notify = None if progress is None else (lambda rows: [progress(r) for r in rows])
    run_command(StreamCommand(job, lambda: pair_units(config.schemes, config.n_pairs), stored, unit_name="pair",
                              chunk_size=1, meta={"limit": config.n_pairs}, on_rows=notify,
                              state=job.prepare(mlm) if mlm is not None and opts.in_process else None), opts)
    keep = {(s, i) for s in config.schemes for i in range(config.n_pairs)}
    _, records = load_records(out / RECORDS_FILE)
    return sorted((r for r in records if (r["scheme"], r["i"]) in keep),
                  key=lambda r: (config.schemes.index(r["scheme"]), r["i"]))
