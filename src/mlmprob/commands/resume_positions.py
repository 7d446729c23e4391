"""A resumed run whose ``--positions`` are spelled differently from the stored ones but name the same positions.

A resume compares the stored configuration key by key, so ``--positions 1-32`` would be refused against a run
without it although, on 32-residue records, both free every residue. Here the two are compared as numbers
(:func:`canonical_positions`), then record by record through the tokenizer (``resolves_same``): when they agree the
run resumes under the stored text, else the usual refusal names ``positions``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import MLMProbError
from ..positions import parse_numbers

KEY, BASE = "positions", "positions_base"


def compact_numbers(numbers: Iterable[int]) -> str:
    """Sorted numbers as the shortest text :func:`mlmprob.positions.parse_numbers` reads back."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def canonical_positions(text: str | None, name: str = "--positions") -> str | None:
    """``--positions`` written one way (sorted ranges), None (all positions) kept."""
    return None if text is None else compact_numbers(parse_numbers(text, name))


def _numbers(text) -> list[int] | None:
    """The numbers a stored text names; None when it cannot be read (an older spelling): never the same."""
    try:
        return parse_numbers(text)
    except MLMProbError:
        return None


def stored_positions(
    out: str | Path | None, config: dict, resolves_same: Callable[[list[int] | None, list[int] | None], bool]
) -> dict:
    """``config`` with the stored ``--positions`` text of the output ``out`` (a resumed file or folder's row file)
    when this run's names the same positions: the same numbers, or ``resolves_same(stored numbers, these)``
    (None: all positions) for every record; else ``config`` as it is (the resume then refuses it, naming them)."""
    from ..runtime.log import RunMeta
    from ..runtime.writers import meta_path

    if out is None or not meta_path(out).is_file():
        return config
    stored = RunMeta(meta_path(out)).config() or {}
    if stored.get("command") != config.get("command") or KEY not in stored:
        return config
    was, now = stored[KEY], config.get(KEY)
    if was == now:
        return config
    old = None if was is None else _numbers(was)
    new = None if now is None else parse_numbers(now)
    if was is not None and old is None:
        return config
    if (sorted(old or []) != sorted(new or []) or (old is None) != (new is None)) and not resolves_same(old, new):
        return config
    kept = {}
    for k, v in config.items():
        if k != BASE:
            kept[k] = was if k == KEY else v
        if k == KEY and BASE in stored:
            kept[BASE] = stored[BASE]
    return kept


def same_free_positions(mlm, records: Iterable, a: list[int] | None, b: list[int] | None, **where) -> bool:
    """Whether the 1-based numbers ``a`` and ``b`` (None: all positions) free the same tokens of every record
    (:func:`~mlmprob.sampling.stream.free_positions`, ``where``: its ``cdr`` and ``numbering``), or both refuse it
    (a record the tokenizer refuses is refused whatever the positions)."""
    from ..sampling.stream import free_positions

    def outcome(rec, enc, numbers):
        try:
            return free_positions(mlm, enc, 0, rec.id, rec.seq, numbers, **where)
        except MLMProbError:
            return None

    for rec in records:
        try:
            enc = mlm.encode([rec.seq])
        except MLMProbError:
            continue
        x, y = outcome(rec, enc, a), outcome(rec, enc, b)
        if (x is None) != (y is None) or (x is not None and not bool((x == y).all())):
            return False
    return True
