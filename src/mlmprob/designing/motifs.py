"""What a motif (``forbid``, ``require``) may be: a regular expression over upper-case residues whose matching cost
is bounded, checked once before any sequence is matched (``re`` backtracks and cannot be stopped: ``(A+)+D`` takes
exponential time on a near match). Refused, each in one line saying why: a repeated group holding a variable
quantifier or an alternation (fixed-length groups may repeat), a count above :data:`MAX_MOTIF_COUNT`, a lower-case
letter, and, given the parent's length, an estimated backtracking cost above :data:`MAX_MOTIF_STEPS`. The presets
(:data:`~mlmprob.designing.constraints.PRESETS`) are not checked."""

from __future__ import annotations

import importlib
import math
from types import SimpleNamespace

from ..errors import MLMProbError

_sre = importlib.import_module("re._parser")  # the parser re.compile itself uses (its tree, not a second grammar)

#: The largest repetition count a motif may hold (``{m}``, ``{m,n}``).
MAX_MOTIF_COUNT = 10_000
#: The most backtracking steps a motif's estimate may reach on the parent's length (a few 1e8 run a second).
MAX_MOTIF_STEPS = 200_000_000
_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", _sre.MAX_REPEAT)}


def check_motif(regex: str, what: str, length: int | None = None) -> None:
    """Refuse ``regex`` (a ``what`` motif) in one line unless its cost is bounded (see the module doc); with
    ``length`` (the parent's), its backtracking estimate on a sequence that long too."""
    try:
        tree = _sre.parse(regex)
    except OverflowError:  # a count beyond what re can hold: 'a{99999999999}'
        raise MLMProbError(f"{what} motif {regex!r} has a repetition count above {MAX_MOTIF_COUNT:,}") from None
    except (RecursionError, MemoryError):
        raise MLMProbError(f"{what} motif {regex!r} is nested too deeply") from None
    # what the walk counts: each variable quantifier's range (None: open-ended), the product of the alternations' sizes
    cost = SimpleNamespace(ranges=[], alternatives=1)
    _walk(tree, regex, what, False, cost)
    if length is not None:
        steps = motif_steps(cost.ranges, cost.alternatives, length)
        if steps > MAX_MOTIF_STEPS:
            raise MLMProbError(
                f"{what} motif {regex!r} would take up to about {steps:.1e} steps to match a sequence of {length} "
                f"residues ({len(cost.ranges)} variable quantifiers in a row backtrack through every split), more "
                f"than {MAX_MOTIF_STEPS:.0e}: use fewer quantifiers, or bound them ({{0,20}} for *)"
            )


def motif_steps(ranges: list[int | None], alternatives: int, length: int) -> int:
    """The backtracking estimate of a motif of variable quantifiers with ``ranges`` (None: open-ended) on a
    sequence of ``length``: ``(L + 1) x min(product of ranges, C(L + k, k)) x alternatives``."""
    k = len(ranges)
    product = math.prod(length + 1 if r is None else min(r, length + 1) for r in ranges)
    return (length + 1) * min(product, math.comb(length + k, k)) * alternatives


def _walk(items, regex: str, what: str, repeated: bool, cost: SimpleNamespace) -> None:
    """Check the parsed ``items`` (``repeated``: inside a group that repeats), counting into ``cost``."""
    for op, av in items:
        if op in _REPEATS:
            lo, hi, body = av
            if any(n != _sre.MAXREPEAT and n > MAX_MOTIF_COUNT for n in (lo, hi)):
                raise MLMProbError(f"{what} motif {regex!r} has a repetition count above {MAX_MOTIF_COUNT:,}")
            if lo != hi:
                _nested(regex, what, repeated, "a quantifier")
                cost.ranges.append(None if hi == _sre.MAXREPEAT else hi - lo + 1)
            _walk(body, regex, what, repeated or hi > 1, cost)
        elif op is _sre.BRANCH or op is _sre.GROUPREF_EXISTS:
            branches = av[1] if op is _sre.BRANCH else [b for b in av[1:] if b is not None]
            _nested(regex, what, repeated, "an alternation")
            cost.alternatives *= max(2, len(branches))
            for b in branches:
                _walk(b, regex, what, repeated, cost)
        elif op is _sre.GROUPREF:
            _nested(regex, what, repeated, "a back-reference")
            cost.ranges.append(None)
        elif op is _sre.SUBPATTERN or op in (_sre.ASSERT, _sre.ASSERT_NOT):
            _walk(av[-1], regex, what, repeated, cost)
        elif op is getattr(_sre, "ATOMIC_GROUP", None):
            _walk(av, regex, what, repeated, cost)
        elif op in (_sre.LITERAL, _sre.NOT_LITERAL):
            _upper(chr(av), regex, what)
        elif op is _sre.IN:
            for o, a in av:
                if o in (_sre.LITERAL, _sre.NOT_LITERAL):
                    _upper(chr(a), regex, what)
                elif o is _sre.RANGE and max(a[0], ord("a")) <= min(a[1], ord("z")):
                    _upper(chr(max(a[0], ord("a"))), regex, what)


def _nested(regex: str, what: str, repeated: bool, thing: str) -> None:
    if repeated:
        raise MLMProbError(
            f"{what} motif {regex!r} repeats a group that holds {thing}: matching it can take exponential time "
            "(regular expressions backtrack); repeat only fixed-length groups, e.g. (?:N[ST])+"
        )


def _upper(c: str, regex: str, what: str) -> None:
    if c.islower():
        raise MLMProbError(
            f"{what} motif {regex!r} has the lower-case letter {c!r}: motifs match upper-case residues (write it in "
            "capitals)"
        )
