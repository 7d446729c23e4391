"""Join shard outputs into one file, checking that every input unit appears exactly once.

Each part's ``PART.meta.json`` (written by the run) names its configuration, its shard and the ids
it skipped. :func:`merge_parts` refuses parts of different runs, unfinished parts, missing shards,
ids that appear twice, and (when the input file is known) input ids that appear in no part.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..errors import MLMProbError
from .writers import open_writer, read_results


def _meta(part: Path) -> dict:
    p = part.with_name(part.name + ".meta.json")
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError):
        raise MLMProbError(f"{p} is damaged (not JSON)") from None


def _names(ids: Iterable[str], limit: int = 5) -> str:
    ids = list(ids)
    shown = ", ".join(repr(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def merge_parts(out: str | Path, parts: Sequence[str | Path], *,
                expected_ids: Callable[[dict, int | None], Iterable[str]] | None = None,
                fields: tuple[str, ...] | None = None) -> int:
    """Write the rows of ``parts`` (in shard order) to ``out``; return the number of rows.

    ``expected_ids(config, limit)`` streams the ids the input holds (from a part's stored configuration),
    or returns None when it cannot tell; without it, only duplicates, shard completeness and part completeness are checked.
    """
    if not parts:
        raise MLMProbError("merge needs at least one part")
    paths = [Path(p) for p in parts]
    for p in paths:
        if not (p.exists() or p.with_name(p.name + ".parts").exists()):
            raise MLMProbError(f"part {str(p)!r} does not exist")
    metas = [_meta(p) for p in paths]
    configs = [{k: v for k, v in m.get("config", {}).items() if k != "shard"} for m in metas]
    for p, m, c in zip(paths, metas, configs):
        if m and not m.get("complete"):
            raise MLMProbError(f"part {p} is unfinished (its run did not complete); finish it with --resume first")
        if c and configs[0] and c != configs[0]:
            k = next(k for k in sorted(set(c) | set(configs[0])) if c.get(k) != configs[0].get(k))
            raise MLMProbError(f"parts come from different runs: {paths[0]} has {k}={configs[0].get(k)!r}, "
                               f"{p} has {k}={c.get(k)!r}")
    shards = [m.get("shard") or m.get("config", {}).get("shard") for m in metas]
    if all(shards):
        counts = {int(s.split("/")[1]) for s in shards}
        if len(counts) != 1:
            raise MLMProbError(f"parts are shards of different splits: {', '.join(sorted(set(shards)))}")
        n = counts.pop()
        idx = [int(s.split("/")[0]) for s in shards]
        have = sorted(idx)
        missing = sorted(set(range(1, n + 1)) - set(have))
        if missing:
            raise MLMProbError(f"shard(s) {', '.join(f'{i}/{n}' for i in missing)} missing from the parts")
        if len(have) != len(set(have)):
            dup = sorted({i for i in have if have.count(i) > 1})
            raise MLMProbError(f"shard(s) {', '.join(f'{i}/{n}' for i in dup)} given more than once")
        paths = [p for _, p in sorted(zip(idx, paths))]
    seen: set[str] = set()
    dups: list[str] = []
    skipped = {str(x[0]) for m in metas for x in m.get("skipped", [])}
    writer = open_writer(out, resume=False, config={**(configs[0] or {}), "merged_from": [str(p) for p in paths]},
                         fields=fields)
    n_rows = 0
    try:
        for p in paths:
            for row in read_results(p):
                rid = str(row.get("id"))
                if rid in seen:
                    dups.append(rid)
                    continue
                seen.add(rid)
                writer.write([row])
                n_rows += 1
        if dups:
            raise MLMProbError(f"{len(dups)} id(s) appear more than once across the parts: {_names(dups)}")
        wanted = expected_ids(configs[0], metas[0].get("limit")) if expected_ids is not None and configs[0] else None
        if wanted is not None:  # None: the run's ids cannot be derived from its configuration
            expected = [str(i) for i in wanted]
            missing = [i for i in expected if i not in seen and i not in skipped and i.rsplit('/', 1)[0] not in skipped]
            if missing:
                raise MLMProbError(f"{len(missing)} input id(s) appear in no part: {_names(missing)}")
            extra = seen - set(expected)
            if extra:
                raise MLMProbError(f"{len(extra)} id(s) in the parts are not in the input: {_names(sorted(extra))}")
    except BaseException:
        writer.close(complete=False)
        for leftover in (Path(out), Path(str(out) + ".meta.json")):
            leftover.unlink(missing_ok=True)
        import shutil
        shutil.rmtree(str(out) + ".parts", ignore_errors=True)
        raise
    writer.close(complete=True, skipped=sorted([i] for i in skipped))
    return n_rows
