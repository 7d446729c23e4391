"""Sampling runs as JSONL files, written epoch by epoch so that a killed run resumes.

Line 1 is a header (format, configuration, initial ids, free positions); each further line is one
``EpochRecord`` with the chain states at the end of the epoch and the generator state, which is
all a resumed run needs. A last line cut short by a kill is ignored.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ..errors import MLMProbError
from ..jsonl import dumps

FORMAT = "mlmprob.sample/1"


@dataclass(frozen=True)
class EpochRecord:
    """Per-epoch, per-chain statistics and the states at the end of epoch ``epoch``.

    ``proposals``/``accepted``/``novel`` count the chain's proposals in the epoch; ``e_local`` and
    ``e_raw`` are the energies of its state (whatever the target); ``identity`` the fraction of
    free positions equal to the reference (None without one); ``forward_rows`` the cumulative
    model rows of the run; ``generator_state`` the hex dump of the generator after the epoch;
    ``log_prob`` (ancestral sampling only) the log-probability of each chain's draw.
    """

    epoch: int
    kept: bool
    target_temperature: float
    block_size: int
    proposals: list[int]
    accepted: list[int]
    novel: list[int]
    e_local: list[float]
    e_raw: list[float]
    identity: list[float] | None
    ids: list[list[int]]
    forward_rows: int
    seconds: float
    generator_state: str = ""
    log_prob: list[float] | None = None

    def to_json(self) -> str:
        d = asdict(self)
        if d["log_prob"] is None:  # MCMC records: written as before
            del d["log_prob"]
        return dumps({"type": "epoch", **d}, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> "EpochRecord":
        """The record of ``to_json``; a ``null`` energy or temperature (written for NaN or an infinity)
        reads as NaN."""
        d = {k: v for k, v in d.items() if k != "type"}
        for k in ("e_local", "e_raw", "log_prob"):
            if d.get(k) is not None:
                d[k] = [math.nan if v is None else v for v in d[k]]
        if d.get("target_temperature") is None:  # NaN for the samplers without a target temperature
            d["target_temperature"] = math.nan
        return cls(**d)


def generator_state_hex(generator: torch.Generator) -> str:
    return bytes(generator.get_state().tolist()).hex()


def set_generator_state(generator: torch.Generator, state: str) -> None:
    generator.set_state(torch.tensor(list(bytes.fromhex(state)), dtype=torch.uint8))


def write_header(path: Path, config: dict, init_ids: torch.Tensor, free: torch.Tensor) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {"type": "header", "format": FORMAT, "config": config, "init_ids": init_ids.tolist(),
            "free": free.int().tolist()}
    tmp = path.with_suffix(path.suffix + ".tmp")   # whole or absent: a kill never leaves half a header
    with tmp.open("w") as f:
        f.write(dumps(head, separators=(",", ":")) + "\n")
    tmp.replace(path)


def append_record(path: Path, record: EpochRecord) -> None:
    with path.open("a") as f:
        f.write(record.to_json() + "\n")
        f.flush()


def read_run(path: Path) -> tuple[dict, list[EpochRecord]]:
    """Header and epoch records of a run file (a truncated last line is dropped)."""
    lines = Path(path).read_text().splitlines()
    if not lines:
        raise MLMProbError(f"{str(path)!r} is empty, not a sampling run")
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        raise MLMProbError(f"{str(path)!r} does not start with a sampling-run header") from None
    if head.get("type") != "header" or head.get("format") != FORMAT:
        raise MLMProbError(f"{str(path)!r} is not a sampling run written by mlmprob ({FORMAT})")
    records = []
    for i, line in enumerate(lines[1:]):
        try:
            d = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) - 2:
                break  # cut short by a kill: this epoch is run again
            raise MLMProbError(f"{str(path)!r} line {i + 2} is not valid JSON") from None
        if d.get("epoch") != len(records):
            raise MLMProbError(f"{str(path)!r} line {i + 2}: expected epoch {len(records)}, got {d.get('epoch')}")
        records.append(EpochRecord.from_dict(d))
    return head, records


def rewrite(path: Path, head: dict, records: list[EpochRecord]) -> None:
    """Rewrite a run file without a truncated tail, so that appending continues cleanly."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w") as f:
        f.write(dumps(head, separators=(",", ":")) + "\n")
        for r in records:
            f.write(r.to_json() + "\n")
    tmp.replace(path)
