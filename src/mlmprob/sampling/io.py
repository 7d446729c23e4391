"""Sampling runs as JSONL files written epoch by epoch: a header (format, configuration, initial ids, free positions),
then one ``EpochRecord`` per epoch with the chain states and the generator state, all a resumed run needs; a
:class:`~mlmprob.runtime.log.ResumableLog` (:meth:`RunFile.open`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch

from ..errors import MLMProbError
from ..jsonl import dumps
from ..runtime.lock import WriterLock
from ..runtime.log import ResumableLog, read_log

FORMAT = "mlmprob.sample/1"
_compact = partial(dumps, separators=(",", ":"))


@dataclass(frozen=True)
class EpochRecord:
    """Per-chain statistics of epoch ``epoch`` and the states at its end: the chain's ``proposals``, ``accepted``,
    ``novel``; the energies of its state ``e_local``, ``e_raw`` (None for draws not scored); ``identity`` to the
    reference (None without one); ``forward_rows`` (cumulative); ``generator_state`` (hex, after the epoch); for
    independent draws ``log_prob``, ``rounds`` and ``calls``.
    """

    epoch: int
    kept: bool
    target_temperature: float
    block_size: int
    proposals: list[int]
    accepted: list[int]
    novel: list[int]
    e_local: list[float] | None
    e_raw: list[float] | None
    identity: list[float] | None
    ids: list[list[int]]
    forward_rows: int
    seconds: float
    generator_state: str = ""
    log_prob: list[float] | None = None
    rounds: list[int] | None = None
    calls: list[int] | None = None

    def to_json(self) -> str:
        optional = ("e_local", "e_raw", "log_prob", "rounds", "calls")  # left out where a method does not record them
        d = {k: v for k, v in asdict(self).items() if v is not None or k not in optional}
        return _compact({"type": "epoch", **d})

    @classmethod
    def from_dict(cls, d: dict) -> EpochRecord:
        """The record of ``to_json``; a ``null`` energy or target temperature (written for NaN or an
        infinity; Gibbs and ancestral sampling have no target temperature) reads as NaN."""
        d = {"e_local": None, "e_raw": None, **{k: v for k, v in d.items() if k != "type"}}
        for k in ("e_local", "e_raw", "log_prob"):
            if d.get(k) is not None:
                d[k] = [math.nan if v is None else v for v in d[k]]
        if d.get("target_temperature") is None:
            d["target_temperature"] = math.nan
        return cls(**d)


def generator_state_hex(generator: torch.Generator) -> str:
    return bytes(generator.get_state().tolist()).hex()


def set_generator_state(generator: torch.Generator, state: str) -> None:
    generator.set_state(torch.tensor(list(bytes.fromhex(state)), dtype=torch.uint8))


def _check_header(path: Path, head) -> dict:
    if not isinstance(head, dict) or head.get("type") != "header" or head.get("format") != FORMAT:
        raise MLMProbError(f"{str(path)!r} is not a sampling run written by mlmprob ({FORMAT})")
    return head


def _epochs(path: Path, objs) -> list[EpochRecord]:
    records: list[EpochRecord] = []
    for i, d in enumerate(objs):
        if not isinstance(d, dict) or d.get("epoch") != len(records):
            raise MLMProbError(
                f"{str(path)!r} line {i + 2}: expected epoch {len(records)}, got "
                f"{d.get('epoch') if isinstance(d, dict) else d!r}"
            )
        records.append(EpochRecord.from_dict(d))
    return records


def read_run(path: Path) -> tuple[dict, list[EpochRecord]]:
    """Header and epoch records of a run file (a torn last line is dropped)."""
    objs = read_log(path)
    head = next(objs, None)
    if head is None:
        raise MLMProbError(f"{str(path)!r} is empty, not a sampling run")
    return _check_header(path, head), _epochs(path, objs)


@dataclass(frozen=True)
class RunFile:
    """Where a sampling run is written as it goes (``path``) and what else a resume must match that the sampler cannot
    see (``computed_with``: the seed, the dtype, ...; :mod:`mlmprob.runtime.provenance`)."""

    path: str | Path
    computed_with: dict | None = None

    def open(self, config: dict, init_ids: torch.Tensor, free: torch.Tensor) -> tuple[ResumableLog, list[EpochRecord]]:
        """The run file as a :class:`~mlmprob.runtime.log.ResumableLog` whose header holds the format, ``config``,
        initial ids, free positions and ``computed_with``, and its complete epochs: a file of the same run is resumed,
        else one is started; another run's is refused naming the keys that differ. The lock is taken unless this
        process holds it already."""
        path = Path(self.path)
        first = next(read_log(path), None)
        if first is not None:
            _check_header(path, first)
        head = dict(type="header", format=FORMAT, config=config, init_ids=init_ids.tolist(), free=free.int().tolist())
        if self.computed_with:  # a run file written before it was stored resumes as before (config_check.as_stored)
            head["computed_with"] = self.computed_with
        log = ResumableLog(path, config=head, header=True, encode=_compact, lock=not WriterLock.held_here(path))
        try:
            return log, _epochs(path, log.records())
        except BaseException:
            log.close()
            raise


class EpochBar:
    """A progress bar for :func:`~mlmprob.sampling.sample`'s ``on_epoch``: one tick per epoch (a resumed run
    starts at its first new epoch), showing the last epoch's acceptance rate (``acceptance``: for a method with an
    accept step) and mean target energy (or its draws' mean log-probability). Close it when the run ends."""

    def __init__(self, desc: str, energy: str = "local", acceptance: bool = True):
        self.desc, self.energy, self.acceptance = desc, energy, acceptance
        self.bar: Any = None  # a tqdm bar, made on the first epoch

    def __call__(self, rec: EpochRecord, total: int) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=rec.epoch, desc=self.desc, unit="epoch")
        self.bar.update(1)
        self.bar.set_postfix(**epoch_shown(rec, self.energy, self.acceptance))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def epoch_shown(rec: EpochRecord, energy: str = "local", acceptance: bool = True) -> dict:
    """What a bar shows of an epoch: the acceptance rate (only with ``acceptance``: a method with no accept step has
    none to show), the mean target energy (``energy``) of its chains when scored, the mean log-probability of
    independent draws."""
    energies = rec.e_local if energy == "local" else rec.e_raw
    shown = {"acc": f"{sum(rec.accepted) / max(sum(rec.proposals), 1):.3f}"} if acceptance else {}
    for key, values in (("E", energies), ("logp", rec.log_prob)):
        if values is not None:
            shown[key] = f"{sum(values) / max(len(values), 1):.2f}"
    return shown
