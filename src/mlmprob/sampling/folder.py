"""Folder mode of ``mlmprob sample`` as a job of the one runner: one unit (:class:`BatchUnit`) holds every input
record, sampled in one batch seeded by ``seed`` and logged to ``OUT/run.jsonl`` as it goes (resumed after its last
complete epoch); its rows (the streamed mode's columns) go to ``OUT/chains.jsonl``, and the command writes the
report from the run file (:func:`result_of_run`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ..positions import WORDS_AND_MASKS, Resolved
from .api import SampleResult, result_from_records, sample
from .io import EpochBar, RunFile, read_run
from .spec import SamplerSpec
from .stream import SampleJob, result_rows

RUN_FILE = "run.jsonl"
CHAINS_FILE = "chains.jsonl"


@dataclass(frozen=True)
class BatchUnit:
    """The one unit of a folder run: every input record, ``(name, sequence)``, sampled together."""

    records: tuple[tuple[str, str], ...]
    id: str = "batch"


@dataclass(frozen=True)
class FolderSampleJob(SampleJob):
    """A folder run: a :class:`~mlmprob.sampling.stream.SampleJob` (its model, ``spec``, ``chains`` per
    input, free ``positions`` or ``cdr``; ``seed`` seeds the one generator of the batch) whose unit is the
    batch, with the ``folder`` that holds the run file and whether an epoch progress bar is shown."""

    folder: str = "."
    progress: bool = False

    # the folder job's unit is the whole batch, not SampleJob's record (it reuses the rest of SampleJob)
    def run(self, state, units: Sequence[BatchUnit]) -> tuple[list[dict], list[tuple[str, str]]]:  # type: ignore[override]
        rows: list[dict] = []
        for unit in units:
            result = self.sample_batch(state.mlm, unit)
            names = [(name, c) for name, _ in unit.records for c in range(self.chains)]
            rows += result_rows(state.mlm, result, names, self.settings())
        return rows, []

    def sample_batch(self, mlm, unit: BatchUnit) -> SampleResult:
        """The chains of every record of ``unit`` in one :func:`~mlmprob.sampling.sample` call, written to
        (and resumed from) the folder's run file."""
        from ..runtime.provenance import computed_with

        ids, free, reference = self.chains_of(mlm, mlm.encode([seq for _, seq in unit.records]), list(unit.records))
        folder = Path(self.folder)
        folder.mkdir(parents=True, exist_ok=True)
        # what the run file must also match on a rerun: the seed (a resumed run restores the generator's
        # state, so another seed would silently continue this one) and how the rows are computed
        ms = self.model_spec
        made = {
            "seed": self.seed,
            **computed_with(ms.model, ms.dtype, [str(mlm.device)], batch_tokens=ms.batch_tokens, mlm=mlm),
        }
        spec, run_file = self.spec, RunFile(folder / RUN_FILE, made)
        where, g = Resolved(free, WORDS_AND_MASKS), torch.Generator().manual_seed(self.seed)
        bar = EpochBar(f"{spec.method} sampling", spec.energy, spec.info.accepts) if self.progress else None
        try:
            return sample(
                mlm, ids, spec, positions=where, generator=g, reference=reference, run_file=run_file, on_epoch=bar
            )
        finally:
            if bar is not None:
                bar.close()


def result_of_run(folder: str | Path, spec: SamplerSpec) -> SampleResult | None:
    """The :class:`~mlmprob.sampling.api.SampleResult` of a finished folder run, from its run file (the same
    object :func:`~mlmprob.sampling.sample` returned); None when the run file is missing or holds fewer
    epochs than the run (a file cut after the run's rows were written: sampling it again completes it)."""
    path = Path(folder) / RUN_FILE
    if not path.is_file():
        return None
    head, records = read_run(path)
    if len(records) < spec.total_epochs:
        return None
    free = torch.tensor(head["free"], dtype=torch.bool)
    return result_from_records(records[: spec.total_epochs], free, spec)
