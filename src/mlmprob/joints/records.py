"""The record file of the pairwise-joint runner, ``OUT/pairs.jsonl``: one JSON record per pair (id ``SCHEME/I``).

Strict JSON writes -inf and NaN as null; :func:`load_records` restores them. Files of the older runner (a
``{"kind": "config"}`` line first) are upgraded in place before they are continued. ``a`` and ``b`` are 1-based
residue/word numbers (``positions_base: 1``); a file without it holds 0-based token indices and is not continued
(``docs/results/joints/convert_positions.py`` converts one)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from ..models.reader import reader_of
from ..runtime.config_check import ConfigMismatch, check_config
from ..runtime.log import RunMeta, read_lines, read_log
from ..runtime.writers import meta_path

if TYPE_CHECKING:
    import torch

RECORDS_FILE = "pairs.jsonl"


_LOGP_KEYS = ("pair_logp", "unary_logp")  # -inf when the gold pair is outside the candidates
_FLOAT_KEYS = ("ci_gap", "incompatibility", "ag_change", "seconds", "seconds_forward", "seconds_total")


def restore_nonfinite(rec: dict) -> dict:
    """A record read back from strict JSON (where -inf and NaN were written as null) with its floats
    restored: metric log-probabilities -> -inf, every other float field -> NaN."""
    for m in (rec.get("metrics") or {}).values():
        for k, v in m.items():
            if v is None:
                m[k] = -math.inf if k in _LOGP_KEYS else math.nan
    for k in _FLOAT_KEYS:
        if k in rec and rec[k] is None:
            rec[k] = math.nan
    mass = rec.get("outside_mass")
    if isinstance(mass, dict):
        rec["outside_mass"] = {k: math.nan if v is None else v for k, v in mass.items()}
    return rec


def load_records(path: str | Path) -> tuple[dict | None, list[dict]]:
    """``(configuration or None, pair records)`` of a record file: this runner's (configuration in
    ``PATH.meta.json``, non-finite floats written as null: see :func:`restore_nonfinite`) or an older
    one's (a first ``{"kind": "config"}`` line). An unreadable trailing line (an interrupted write) is dropped."""
    path = Path(path)
    header, records = None, []
    for obj in read_log(path):
        if obj.get("kind") == "config":
            header = obj["config"]
        elif obj.get("kind") == "pair":
            records.append(restore_nonfinite(obj))
    config = RunMeta(meta_path(path)).config() if header is None else None
    if config:
        drop = ("command", "dtype", "shard", "merged_from", "computed_with")
        header = {k: v for k, v in config.items() if k not in drop}
    return header, records


POSITIONS_BASE = {"positions_base": 1}  # a and b are 1-based residue/word numbers


def _dtype_label(mlm, dtype, device: str, model=None) -> str | None:
    """The dtype the pairs are computed in, as text (part of the stored configuration: pairs of two
    precisions never share one file); the default ``weights`` resolved as the run's ``computed_with``
    block resolves it (:func:`mlmprob.runtime.provenance.weights_dtype_text`)."""
    from ..runtime.device import resolve_device, resolve_dtype
    from ..runtime.provenance import weights_dtype_text

    dt: torch.dtype | None
    if mlm is not None:
        dt = reader_of(mlm).dtype
    else:
        dt = resolve_dtype(dtype, resolve_device(device))
        if dt is None:
            return weights_dtype_text(model, [device])
    return None if dt is None else str(dt).replace("torch.", "")


def _upgrade_legacy(path: Path, config: dict) -> None:
    """An older runner's file (a config line first, records without ids) rewritten in this runner's
    layout, if it holds this configuration (``config``: the one the run's writer stores)."""
    from ..runtime.inputs import detect_format
    from ..runtime.writers import dumps

    if not next(read_lines(path), "").startswith('{"kind": "config"'):
        return
    header, records = load_records(path)
    assert header is not None  # its first line is the configuration (checked above)
    if header.get("positions_base") != 1:
        raise ConfigMismatch(
            f"cannot resume {path}: its pairs' a and b are 0-based token indices (written before "
            "0.2.0, which numbers them from 1); convert it with docs/results/joints/"
            "convert_positions.py or use another --out"
        )
    ident = {k: v for k, v in config.items() if k not in ("command", "dtype", "shard")}
    fmt = config["format"]
    if (detect_format(config["data"]) if fmt == "auto" else fmt) in ("text", "fasta"):
        header = {k: v for k, v in header.items() if k != "column"}  # it had no meaning there
    check_config(
        path, {**header, "shard": "1/1"}, {**{k: ident.get(k, v) for k, v in header.items()}, "shard": config["shard"]}
    )
    RunMeta(meta_path(path), indent=2).save({"config": config, "complete": False, "skipped": []})
    from ..runtime.safefs import replace_file  # PATH.tmp created new, never through a symbolic link

    replace_file(path, "".join(dumps({"id": f"{r['scheme']}/{r['i']}", **r}) + "\n" for r in records))


def check_records(out_dir: str | Path, config: dict) -> dict:
    """Check ``out_dir/pairs.jsonl`` before a run continues it: an older runner's file is upgraded (under the writer
    lock: refused while another process writes it), and a file of another configuration (the run's writer's ``config``:
    the model, the data, the settings, the ``dtype`` and the ``shard``) is refused. Returns ``config``."""
    from ..runtime.lock import WriterLock

    path = Path(out_dir) / RECORDS_FILE
    with WriterLock(path):
        _upgrade_legacy(path, config)
    stored = (RunMeta(meta_path(path)).config() if path.exists() else None) or {}
    # the writer checks the computed_with block it adds (runtime.provenance)
    check_config(path, {k: v for k, v in stored.items() if k != "computed_with"}, config)
    return config
