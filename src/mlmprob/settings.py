"""The shared shape of the algorithms' specs: a frozen dataclass of one run's settings, validated once in its
``__post_init__``, made from parsed CLI arguments by field name (:func:`mlmprob.commands.common.spec_of`) and
written down as plain JSON values (docs/architecture.md, "One spec per algorithm")."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import MISSING
from typing import Any, ClassVar

from .errors import MLMProbError


class Spec:
    """The base of a frozen dataclass spec: :meth:`of`, :meth:`check`, :meth:`replace`, :meth:`settings` and
    :meth:`recorded`. ``hint`` (a class attribute, not a field): what to pass instead of another object."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # every Spec is a dataclass (for dataclasses.fields)

    hint = ""

    @classmethod
    def check(cls, spec):
        """``spec``, refused in one line unless it is one of these specs (a job's or an API's ``spec``)."""
        if not isinstance(spec, cls):
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            raise MLMProbError(f"spec must be {article} {cls.__name__}{cls.hint}, got {type(spec).__name__}")
        return spec

    @classmethod
    def of(cls, spec=None, /, **overrides):
        """An algorithm's settings (its ``f(mlm, inputs..., spec=None, **overrides)``): ``spec`` (None: this class's
        defaults) with ``overrides`` changing its fields by name (validated again); an unknown keyword is refused
        in one line naming the fields.

        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Demo(Spec):
        ...     size: int = 1
        ...     name: str = "a"
        >>> Demo.of(size=2), Demo.of(Demo(name="b"), size=3)
        (Demo(size=2, name='a'), Demo(size=3, name='b'))
        >>> Demo.of(sise=2)
        Traceback (most recent call last):
        ...
        mlmprob.errors.MLMProbError: unknown setting 'sise' of Demo; the settings are size, name
        """
        fields = dataclasses.fields(cls)
        check_known(cls.__name__, overrides, [f.name for f in fields])
        if spec is not None:
            return cls.check(spec).replace(**overrides) if overrides else cls.check(spec)
        missing = [f.name for f in fields if f.name not in overrides and f.default is f.default_factory is MISSING]
        if missing:
            raise MLMProbError(f"{cls.__name__} needs {', '.join(missing)} (give a spec or these keywords)")
        return cls(**overrides)

    def replace(self, **changes):
        """A copy with ``changes`` (validated again)."""
        return dataclasses.replace(self, **changes)

    def uses(self, name: str) -> bool:
        """Whether the field ``name`` is written down for these settings (a spec with per-mode fields says which)."""
        return True

    def settings(self) -> dict:
        """The fields this run uses (:meth:`uses`), in field order, as plain JSON values."""
        return {f.name: json_value(getattr(self, f.name)) for f in dataclasses.fields(self) if self.uses(f.name)}

    def recorded(self) -> dict:
        """What a run's output records of these settings and a resumed run must match: :meth:`settings` less the
        fields marked ``metadata={"recorded": False}`` (recorded another way, or not changing the rows) and those
        marked ``{"recorded": "unless default"}`` at their default.

        >>> from dataclasses import dataclass, field
        >>> @dataclass(frozen=True)
        ... class Demo(Spec):
        ...     size: int = field(default=1, metadata={"recorded": False})
        ...     kind: str = field(default="a", metadata={"recorded": "unless default"})
        ...     names: tuple = ("x",)
        >>> Demo().recorded(), Demo(size=2, kind="b").recorded()
        ({'names': ['x']}, {'kind': 'b', 'names': ['x']})
        """
        out = self.settings()
        for f in dataclasses.fields(self):
            how = f.metadata.get("recorded", True)
            if f.name in out and (how is False or (how == "unless default" and getattr(self, f.name) == f.default)):
                del out[f.name]
        return out


def check_known(owner: str, keywords, names) -> None:
    """Refuse in one line the ``keywords`` that are not among ``names``, the settings ``owner`` (a spec class, an
    entry point) takes: the package's one wording of an unknown keyword (:meth:`Spec.of`'s example)."""
    unknown = [k for k in keywords if k not in names]
    if unknown:
        s = "s" if len(unknown) > 1 else ""
        valid = f"the settings are {', '.join(names)}" if names else "it has none"
        raise MLMProbError(f"unknown setting{s} {', '.join(map(repr, unknown))} of {owner}; {valid}")


def json_value(value):
    """``value`` as plain JSON: tuples become lists, tensors their ``tolist()``."""
    if isinstance(value, (tuple, list)):
        return [json_value(v) for v in value]
    return value.tolist() if hasattr(value, "tolist") else value


def check_int(name: str, value, lo: int, what: str, most: int | None = None) -> int:
    """``value`` if an integer (not a bool) ``>= lo`` (and ``<= most``); else one line: ``name`` must be ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (most is not None and value > most):
        raise MLMProbError(f"{name} must be {what}, got {value!r}")
    return value


MAX_SEED = 2**63 - 1  # a seed is not a count, but it seeds a torch.Generator (a 64-bit integer)


def check_seed(value, name: str = "seed") -> None:
    """Refuse a seed that is not an integer in ``0..MAX_SEED`` (a torch generator's range: 10**20 overflowed it)."""
    check_int(name, value, 0, "a non-negative integer")
    if value > MAX_SEED:
        raise MLMProbError(f"{name} must be at most 2**63 - 1 (a generator's seed), got {value}")


def check_count(name: str, value, most: int, why: str) -> int:
    """``value`` if it is a positive integer (not a bool) of at most ``most``; else one line naming ``name``, the
    bound and ``why`` (what each unit costs)."""
    check_int(name, value, 1, "a positive integer")
    if value > most:
        raise MLMProbError(f"{name} must be at most {most:,} ({why}), got {value!r}")
    return value


def check_ladder(value, name: str = "temperatures") -> tuple[float, ...]:
    """A replica-exchange ladder as a tuple: at least two finite temperatures > 0 (a tuple or list), increasing from
    the target's; else one line naming ``name``."""
    t = tuple(value) if isinstance(value, list) else value
    if not isinstance(t, tuple) or len(t) < 2:
        raise MLMProbError(f"{name} must be a tuple of at least two temperatures, got {value!r}")
    for x in t:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not x > 0 or math.isinf(x):
            raise MLMProbError(f"{name} must be a positive number, got {x!r}")
    if list(t) != sorted(t) or len(set(t)) != len(t):
        raise MLMProbError(f"{name} must increase from the target's, got {t!r}")
    return t


def check_choice(name: str, value, choices: tuple) -> None:
    """Refuse ``value`` unless it is one of ``choices``."""
    if value not in choices:
        raise MLMProbError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
