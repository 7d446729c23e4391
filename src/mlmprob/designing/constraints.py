"""The hard constraints ``C`` of a design run, on residue strings (no torch): allowed residues per position, at most
``max_mutations`` from the parent, forbidden motifs (``re.search``; liabilities as named presets) and required ones.
The target is 0 outside ``C``: a sampler rejects a move that leaves it, never repairs one."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..alphabet import AMINO_ACIDS
from ..errors import MLMProbError
from .motifs import check_motif

#: Named forbidden motifs (the usual antibody liabilities). ``unpaired-cysteine``: an odd number of C.
PRESETS = {
    "glycosylation": "N[^P][ST]",
    "deamidation": "NG",
    "isomerization": "DG",
    "unpaired-cysteine": "^[^C]*C(?:[^C]*C[^C]*C)*[^C]*$",
}
#: ``liabilities``: every preset at once.
PRESET_GROUPS = {"liabilities": tuple(PRESETS)}


def motif_patterns(
    motifs: Iterable[str], what: str, length: int | None = None
) -> tuple[tuple[str, str, re.Pattern], ...]:
    """``(name, regex, compiled)`` of each motif: a preset name (or group) or a regular expression; an invalid
    regular expression, or one whose matching cost is not bounded (on sequences of ``length``, when given: see
    :mod:`~mlmprob.designing.motifs`), is refused in one line.

    >>> [m[:2] for m in motif_patterns(["NG", "liabilities"], "forbid")][:2]
    [('NG', 'NG'), ('glycosylation', 'N[^P][ST]')]
    >>> motif_patterns(["N[ST"], "forbid")
    Traceback (most recent call last):
    ...
    mlmprob.errors.MLMProbError: forbid motif 'N[ST' is not a valid regular expression: unterminated character set \
at position 1
    """
    out = []
    for motif in motifs:
        if not isinstance(motif, str) or not motif:
            raise MLMProbError(f"{what} motif must be a non-empty string, got {motif!r}")
        names = PRESET_GROUPS.get(motif, (motif,))
        for name in names:
            regex = PRESETS.get(name, name)
            try:
                if name not in PRESETS:  # a cost bound, before compiling (a count too large for re included)
                    check_motif(regex, what, length)
                out.append((name, regex, re.compile(regex)))
            except re.error as e:
                raise MLMProbError(f"{what} motif {regex!r} is not a valid regular expression: {e}") from None
    return tuple(out)


def mutant_string(parent: str, seq: str) -> str:
    """The mutations from ``parent`` as a ProteinGym mutant string (1-based positions, ``:`` between them; ``""``
    for none).

    >>> mutant_string("AKLV", "GKLR")
    'A1G:V4R'
    """
    return ":".join(f"{a}{i + 1}{b}" for i, (a, b) in enumerate(zip(parent, seq, strict=True)) if a != b)


@dataclass(frozen=True)
class Constraints:
    """The hard constraints of one parent, resolved: ``allowed[j]`` the residues position ``j`` (0-based) may
    take (the parent's residue alone where it may not change), ``max_mutations`` (None: no bound), and the
    compiled forbidden and required motifs. Build with :meth:`build`."""

    parent: str
    allowed: tuple[str, ...]
    max_mutations: int | None
    forbid: tuple[tuple[str, str, re.Pattern], ...]
    require: tuple[tuple[str, str, re.Pattern], ...]
    tolerated: tuple[frozenset[int], ...] = ()  # per forbidden motif: the parent's own match starts, if kept

    @classmethod
    def build(
        cls,
        parent: str,
        alphabet: str = AMINO_ACIDS,
        *,
        positions: Iterable[int] | None = None,
        allowed: Iterable[tuple[int, str]] = (),
        max_mutations: int | None = None,
        forbid: Iterable[str] = (),
        require: Iterable[str] = (),
        start_invalid: bool = False,
        keep_parent_motifs: bool = False,
    ) -> Constraints:
        """The constraints of ``parent`` over ``alphabet`` (the residues every expert reads): ``positions`` the
        1-based positions that may change (None: all), ``allowed`` pairs ``(position, residues)`` restricting a
        position (1-based), ``forbid``/``require`` motifs (regular expressions or :data:`PRESETS` names). A parent
        outside ``C`` is refused unless ``start_invalid``. ``keep_parent_motifs``: a forbidden motif the parent
        already has is tolerated where it starts in the parent (only new occurrences violate ``C``)."""
        if not isinstance(parent, str) or not parent:
            raise MLMProbError("the parent must be a non-empty residue string")
        bad = sorted(set(parent) - set(alphabet))
        if bad:
            j = min(parent.index(c) for c in bad)
            raise MLMProbError(
                f"the parent has {parent[j]!r} at residue {j + 1}, which not every expert can read "
                f"(they share {alphabet})"
            )
        L = len(parent)
        free = set(range(L)) if positions is None else {_position(p, L, "positions") for p in positions}
        sets = [alphabet if j in free else parent[j] for j in range(L)]
        for p, letters in allowed:
            j = _position(p, L, "allowed")
            keep = "".join(c for c in alphabet if c in set(letters) and (j in free or c == parent[j]))
            if not keep:
                raise MLMProbError(
                    f"position {p} has an empty allowed set ({letters!r} among the residues every expert reads, "
                    f"{alphabet}{'' if j in free else ', and the position may not change'})"
                )
            sets[j] = keep
        if max_mutations is not None and (isinstance(max_mutations, bool) or max_mutations < 0):
            raise MLMProbError(f"max_mutations must be a non-negative integer, got {max_mutations!r}")
        forbidden = motif_patterns(forbid, "forbid", L)
        # each forbidden motif's starts in the parent (overlapping matches included), tolerated if kept
        kept = tuple(
            frozenset(j for j in range(L + 1) if keep_parent_motifs and p.match(parent, j)) for *_, p in forbidden
        )
        c = cls(parent, tuple(sets), max_mutations, forbidden, motif_patterns(require, "require", L), kept)
        why = c.violations(parent)
        if why and not start_invalid:
            raise MLMProbError(
                f"the parent violates a hard constraint: {why[0]} (pass start_invalid=True, --start-invalid, to start "
                "there anyway)"
            )
        return c

    @property
    def length(self) -> int:
        return len(self.parent)

    def violations(self, seq: str) -> list[str]:
        """What ``seq`` violates, one phrase each (empty: ``seq`` is in ``C``)."""
        out = []
        if len(seq) != self.length:
            return [f"length {len(seq)}, the parent has {self.length}"]
        for j, (c, ok) in enumerate(zip(seq, self.allowed, strict=True)):
            if c not in ok:
                out.append(f"{c} at residue {j + 1} is not allowed there ({ok})")
        n = sum(a != b for a, b in zip(seq, self.parent, strict=True))
        if self.max_mutations is not None and n > self.max_mutations:
            out.append(f"{n} mutations from the parent, more than {self.max_mutations}")
        for k, (name, regex, _pat) in enumerate(self.forbid):
            m = self._new_match(k, seq)
            if m and name == "unpaired-cysteine":
                out.append(f"an unpaired cysteine ({seq.count('C')} C, an odd number)")
            elif m:
                label = name if name == regex else f"{name} ({regex})"
                out.append(f"forbidden motif {label} at residue {m.start() + 1}")
        for name, _regex, pat in self.require:
            if not pat.search(seq):
                out.append(f"required motif {name} is missing")
        return out

    def _new_match(self, k: int, seq: str):
        """The first match of forbidden motif ``k`` in ``seq`` that the parent does not have at its start (any match
        unless ``keep_parent_motifs``), or None."""
        pat = self.forbid[k][2]
        kept = self.tolerated[k] if self.tolerated else frozenset()
        if not kept:
            return pat.search(seq)
        return next((m for j in range(len(seq) + 1) if j not in kept and (m := pat.match(seq, j))), None)

    def motifs_ok(self, seq: str) -> bool:
        """Whether ``seq`` passes the motif constraints (forbidden and required)."""
        return not any(self._new_match(k, seq) for k in range(len(self.forbid))) and all(
            p.search(seq) for _, _, p in self.require
        )

    def ok(self, seq: str) -> bool:
        """Whether ``seq`` is in ``C``."""
        return not self.violations(seq)


def _position(p, length: int, what: str) -> int:
    if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= length:
        raise MLMProbError(f"{what}: position {p!r} is not a residue number in 1..{length} of the parent")
    return p - 1
