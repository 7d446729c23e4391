"""Join shard outputs into one file, atomically, checking every input unit appears once, in order."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path

from ..errors import MLMProbError
from .config_check import config_diff
from .identity import KEY as IDENTITY
from .identity import check_parts
from .lock import WriterLock
from .safefs import refuse_link
from .writers import OUTPUT_KINDS, meta_path, open_writer, output_kind, read_results, remove_output

WRITE_ROWS = 1024  # rows committed together
UNCHECKED = "unchecked"
"""The key of a merged output's stored configuration listing what its merge did not check (parts without metadata,
the input's ids): a later merge treats it as a part without metadata; a resume onto it is refused."""


def _meta(part: Path, require: bool = True) -> dict:
    p = meta_path(part)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        if require:
            raise MLMProbError(
                f"part {part} has no {p.name}: its run, shard, row count and completion cannot be "
                "checked; merge it only if you know them, with --no-meta-check"
            ) from None
        return {}
    except (OSError, json.JSONDecodeError):
        raise MLMProbError(f"{p} is damaged (not JSON)") from None
    if not isinstance(data, dict) or not isinstance(data.get("config", {}), dict):
        raise MLMProbError(f"{p} is damaged (not a run's metadata)")
    if unchecked := data.get("config", {}).get(UNCHECKED):  # an unchecked merge's output: it vouches for nothing
        if require:
            raise MLMProbError(
                f"part {part} was merged without checks ({'; '.join(map(str, unchecked))}): its run, shard, "
                "row count and completion are not known; merge it only if you know them, with --no-meta-check"
            )
        return {}
    return data


def _check_formats(out: Path, paths: list[Path]) -> None:
    """Refuse a TSV part (text cells) merged with typed parts or into a typed output; JSONL and Parquet parts mix."""
    kinds = {output_kind(p) for p in paths}
    if "tsv" in kinds and len(kinds) > 1:
        raise MLMProbError(
            f"parts are of different formats ({', '.join('.' + k for k in sorted(kinds))}): a .tsv "
            "part holds text cells, so its numbers would become strings; merge parts of one format"
        )
    if kinds == {"tsv"} and output_kind(out) != "tsv":
        raise MLMProbError(
            f"the parts are .tsv (text cells): merged into .{output_kind(out)} their numbers would "
            "become strings; merge them into a .tsv --out"
        )


def _check_whole(part: Path) -> None:
    """A line part (JSONL, TSV) ends with a newline: its last line was not cut by a kill or a copy."""
    if output_kind(part) == "parquet" or not part.exists():
        return
    with open(part, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        if end and (f.seek(end - 1), f.read(1))[1] != b"\n":
            raise MLMProbError(
                f"part {part} ends in a torn line (no newline: cut by a kill or an incomplete copy); "
                "rerun its shard with --resume"
            )


def _names(ids: Iterable[str], limit: int = 5) -> str:
    ids = list(ids)
    shown = ", ".join(repr(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _check_runs(paths: list[Path], configs: list[dict]) -> None:
    """Every part was written by one command (said first), from one input with the same weights
    (:func:`~mlmprob.runtime.identity.check_parts`), with one configuration (the shard left out): else one error
    naming the first differing option and two parts. A part without a stored configuration is not checked."""
    named = [(p, c["command"]) for p, c in zip(paths, configs, strict=True) if c.get("command")]
    for p, command in named:
        if command != named[0][1]:
            raise MLMProbError(
                f"parts come from different commands: {named[0][0]} holds results of mlmprob {named[0][1]}, "
                f"{p} of mlmprob {command}"
            )
    check_parts(paths, [c.get(IDENTITY) for c in configs])
    known = [(p, c) for p, c in zip(paths, configs, strict=True) if c]
    for p, c in known[1:]:
        diff = config_diff(known[0][1], c)  # both read back from JSON
        if diff:  # the precision first: it decides the other keys of computed_with
            k, a, b = next((d for d in diff if d[0].endswith(".dtype")), diff[0])
            raise MLMProbError(f"parts come from different runs: {known[0][0]} has {k}={a!r}, {p} has {k}={b!r}")


def _check_shards(paths: list[Path], metas: list[dict]) -> tuple[list[Path], list[dict]]:
    """The parts and their metadata in shard order, checked to be every shard of one split once."""
    shards = [m.get("shard") or m.get("config", {}).get("shard") for m in metas]
    counts = {int(s.split("/")[1]) for s in shards if s}
    if len(counts) > 1:
        raise MLMProbError(f"parts are shards of different splits: {', '.join(sorted(set(filter(None, shards))))}")
    n = counts.pop() if counts else 0
    if not all(shards):  # parts without metadata (--no-meta-check): at least as many parts as shards
        if len(paths) < n:
            raise MLMProbError(f"{n - len(paths)} of the {n} shards missing from the parts")
        return paths, metas
    idx = [int(s.split("/")[0]) for s in shards]
    have = sorted(idx)
    if missing := sorted(set(range(1, n + 1)) - set(have)):
        raise MLMProbError(f"shard(s) {', '.join(f'{i}/{n}' for i in missing)} missing from the parts")
    if len(have) != len(set(have)):
        dup = sorted({i for i in have if have.count(i) > 1})
        raise MLMProbError(f"shard(s) {', '.join(f'{i}/{n}' for i in dup)} given more than once")
    order = sorted(range(len(paths)), key=idx.__getitem__)  # the shards are distinct: their order is the parts'
    return [paths[k] for k in order], [metas[k] for k in order]


def _index(paths: list[Path]) -> tuple[dict[str, int], list[int]]:
    """``{row id: index of its part}`` and each part's row count; an error naming ids found twice."""
    where: dict[str, int] = {}
    dups: list[str] = []
    counts = [0] * len(paths)
    for n, p in enumerate(paths):
        for row in read_results(p):
            counts[n] += 1
            rid = str(row.get("id"))
            if rid in where:
                dups.append(rid)
            else:
                where[rid] = n
    if dups:
        raise MLMProbError(f"{len(dups)} id(s) appear more than once across the parts: {_names(dups)}")
    return where, counts


def _in_order(paths: list[Path], where: dict[str, int], order: list[str] | None) -> Iterator[dict]:
    """The rows of the parts in ``order`` (ids) when given, else part after part; each part read once, in order."""
    if order is None:
        for p in paths:
            yield from read_results(p)
        return
    readers = [iter(read_results(p)) for p in paths]
    waiting: dict[str, dict] = {}
    for rid in order:
        n = where.get(rid)
        if n is None:
            continue  # skipped by its run
        while rid not in waiting:
            row = next(readers[n])
            waiting[str(row.get("id"))] = row
        yield waiting.pop(rid)


def merging_path(out: Path) -> Path:
    """Where :func:`merge_parts` writes before the output is complete: ``OUT.merging.SUFFIX`` (with its own
    ``.meta.json``, lock and Parquet parts), renamed to ``OUT`` at the end."""
    return out.with_name(f"{out.name}.merging{out.suffix}")


def _expected_order(expected_ids, metas: list[dict], where: dict, skipped: set[str]) -> list[str] | None:
    """The input's ids in order, named by the first part with metadata (None when it cannot tell), checked: every
    input id in a part (or skipped) and every part id in the input."""
    first = next((m for m in metas if m.get("config")), None)
    if expected_ids is None or first is None:
        return None
    wanted = expected_ids({k: v for k, v in first["config"].items() if k != "shard"}, first.get("limit"))
    if wanted is None:
        return None
    order = [str(i) for i in wanted]
    missing = [i for i in order if i not in where and i not in skipped and i.rsplit("/", 1)[0] not in skipped]
    if missing:
        raise MLMProbError(f"{len(missing)} input id(s) appear in no part: {_names(missing)}")
    if extra := set(where) - set(order):
        raise MLMProbError(f"{len(extra)} id(s) in the parts are not in the input: {_names(sorted(extra))}")
    return order


def _merged_config(paths: list[Path], metas: list[dict], configs: list[dict], not_checked: Sequence[str]) -> dict:
    """The merged output's configuration: the first part's, the parts merged and what was not checked."""
    unchecked = [f"{p} has no metadata" for p, m in zip(paths, metas, strict=True) if not m] + list(not_checked)
    config = {**next((c for c in configs if c), {}), "merged_from": [str(p) for p in paths]}
    return {**config, UNCHECKED: unchecked} if unchecked else config


def merge_parts(
    out: str | Path,
    parts: Sequence[str | Path],
    *,
    expected_ids: Callable[[dict, int | None], Iterable[str]] | None = None,
    fields: tuple[str, ...] | None = None,
    require_meta: bool = True,
    not_checked: Sequence[str] = (),
) -> int:
    """Write the rows of ``parts`` to ``out``; return the number of rows.

    Refused before anything is written: a part without its ``PART.meta.json`` (unless ``require_meta`` is False),
    parts of different commands, configurations (the shard aside; the option named), identities
    (:mod:`mlmprob.runtime.identity`) or formats (.tsv with typed ones), unfinished, torn or altered parts, missing or
    repeated shards, ids in more than one part and, when ``expected_ids(config, limit)`` streams the input's ids (None:
    it cannot tell), input ids in no part and part ids not in the input. ``fields``: the TSV columns.

    The rows are written in input order when the input's ids are known, else part after part in shard order, to
    :func:`merging_path`, renamed to ``out`` at the end (a killed merge is run again). An existing ``out`` is refused.
    What was not checked (parts without metadata, ``not_checked``) is listed in its metadata under :data:`UNCHECKED`."""
    if not parts:
        raise MLMProbError("merge needs at least one part")
    out = Path(out)
    output_kind(out)
    paths = [Path(p) for p in parts]
    for p in paths:
        if not (p.exists() or p.with_name(p.name + ".parts").exists()):
            raise MLMProbError(f"part {str(p)!r} does not exist")
        if p.suffix.lower() not in OUTPUT_KINDS:
            raise MLMProbError(f"part {str(p)!r}: merge reads .jsonl, .tsv or .parquet parts")
    _check_formats(out, paths)
    metas = [_meta(p, require_meta) for p in paths]
    configs = [{k: v for k, v in m.get("config", {}).items() if k != "shard"} for m in metas]
    for p, m in zip(paths, metas, strict=True):
        if m and m.get("complete") is not True:
            raise MLMProbError(f"part {p} is unfinished (its run did not complete); finish it with --resume first")
        _check_whole(p)
    _check_runs(paths, configs)
    paths, metas = _check_shards(paths, metas)
    skipped = {str(x[0]) for m in metas for x in m.get("skipped", [])}
    with WriterLock(out):  # one merge into ``out`` at a time; its leftovers are then ours
        if out.exists():
            raise MLMProbError(f"{out} exists; merge does not overwrite: remove it or choose another --out")
        tmp = merging_path(out)
        refuse_link(meta_path(out), "the output's side file")  # the merged meta is renamed there at the end
        remove_output(tmp)  # what a killed merge left
        where, counts = _index(paths)
        order = _expected_order(expected_ids, metas, where, skipped)
        for p, m, n in zip(paths, metas, counts, strict=True):  # after the ids checks: they name the rows that differ
            if isinstance(m.get("rows"), int) and n != m["rows"]:  # each part holds the rows its run wrote
                raise MLMProbError(
                    f"part {p} holds {n} rows but its run wrote {m['rows']} ({meta_path(p).name}): "
                    "it was truncated or changed since; rerun its shard"
                )
        writer = open_writer(
            tmp, resume=False, config=_merged_config(paths, metas, configs, not_checked), fields=fields
        )
        try:
            rows = _in_order(paths, where, order)
            while batch := list(islice(rows, WRITE_ROWS)):
                writer.write(batch)
        except BaseException:
            writer.close(complete=False)
            remove_output(tmp)
            raise
        writer.close(complete=True, skipped=sorted([i] for i in skipped))
        os.replace(meta_path(tmp), meta_path(out))  # the metadata first: ``out`` itself is the commit
        os.replace(tmp, out)
    return writer.rows_written
