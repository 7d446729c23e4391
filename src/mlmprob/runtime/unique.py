"""Unique ids in a stream of records, checked (or deduplicated) while streaming: :class:`UniqueIds`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..errors import MLMProbError


class UniqueIds:
    """Checks that the ids of a stream of records (anything with an ``id``) are unique, while streaming:
    a repeated id raises one line naming it and both record numbers; with ``dedupe`` the repeat is dropped
    (the first kept) and counted in :attr:`dropped`. Memory: one set entry per distinct id."""

    def __init__(self, dedupe: bool = False, what: str = "record"):
        self.dedupe, self.what, self.dropped = dedupe, what, 0
        self.first_dropped: tuple[str, int] | None = None

    def __call__(self, records: Iterable) -> Iterator:
        self.dropped, self.first_dropped = 0, None  # a fresh count each pass over the input
        seen: dict[str, int] = {}
        for n, r in enumerate(records, 1):
            first = seen.setdefault(r.id, n)
            if first == n:
                yield r
            elif self.dedupe:
                self.dropped += 1
                self.first_dropped = self.first_dropped or (r.id, n)
            else:
                raise MLMProbError(
                    f"duplicate id {r.id!r}: {self.what}s {first} and {n} "
                    "(ids must be unique; --dedupe keeps the first)"
                )

    def warning(self) -> str | None:
        """The warning line of a deduplicated pass (None when nothing was dropped)."""
        if not self.dropped or self.first_dropped is None:
            return None
        rid, n = self.first_dropped
        return (
            f"warning: --dedupe dropped {self.dropped} {self.what}(s) repeating an earlier id "
            f"(first: {rid!r}, {self.what} {n})"
        )


def unique_ids(records: Iterable, dedupe: bool = False) -> Iterator:
    """The records, their ids checked unique (or deduplicated): see :class:`UniqueIds`."""
    return UniqueIds(dedupe)(records)
