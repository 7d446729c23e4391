"""``argparse`` types for numeric options: each turns the text into a number or rejects it with one clear line
(argparse prints ``error: argument --NAME: ...``, status 2); NaN, infinities and values beyond ``LIMIT`` are refused."""

from __future__ import annotations

import argparse
import math
import re

from .defaults import DEVICE_TYPES
from .errors import MLMProbError

LIMIT = 10**9  # larger numbers are refused: no option of mlmprob means anything that large
MAX_THREADS = 1024  # more CPU threads is a typing mistake (OpenMP sizes its pool up front: 10**9 asks for ~200 GB)


def _number(text: str, what: str, kind: type = int):
    """``kind(text)`` (int or float), refused as ``must be WHAT`` unless it is a finite number within ``LIMIT``."""
    try:
        value = kind(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    if abs(value) > LIMIT:
        limit = f"{LIMIT:,}" if kind is int else f"{LIMIT:g}"
        raise argparse.ArgumentTypeError(f"must be {what} no larger than {limit}, got {text!r}")
    return value


def _ranged(name: str, kind: type, what: str, ok=lambda v: True):
    """The argparse type ``name``: a ``kind`` number (:func:`_number`) refused as ``must be WHAT`` unless ``ok``."""

    def convert(text: str):
        value = _number(text, what, kind)
        if not ok(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    convert.__name__ = convert.__qualname__ = name
    return convert


integer = _ranged("integer", int, "an integer")  # e.g. a residue numbering offset
positive_int = _ranged("positive_int", int, "a positive integer", lambda v: v >= 1)
nonnegative_int = _ranged("nonnegative_int", int, "a non-negative integer", lambda v: v >= 0)
finite_float = _ranged("finite_float", float, "a finite number")
positive_float = _ranged("positive_float", float, "a positive number", lambda v: v > 0)
nonnegative_float = _ranged("nonnegative_float", float, "a non-negative number", lambda v: v >= 0)
probability = _ranged("probability", float, "a probability in (0, 1]", lambda v: 0 < v <= 1)
open_fraction = _ranged("open_fraction", float, "a fraction in (0, 1)", lambda v: 0 < v < 1)  # e.g. a held-out share


def thread_count(text: str) -> int:
    """A number of CPU threads: an integer in 1..``MAX_THREADS``."""
    value = positive_int(text)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"must be a positive integer no larger than {MAX_THREADS:,}, got {text!r}")
    return value


def ladder(text: str) -> tuple[float, ...]:
    """A replica ladder: numbers separated by commas, checked by the specs' own check
    (:func:`mlmprob.settings.check_ladder`: at least two, positive, increasing from the target's ``1,1.5,2.5``)."""
    from .settings import check_ladder

    return checked(lambda t: tuple(_number(x, "a number", float) for x in t.split(",")), check_ladder)(text)


def checked(parse, check=None):
    """The type of a flag that sets a spec field: the text read by ``parse`` (``int``, ``float``, or a spec's parse
    function refusing with :class:`~mlmprob.errors.MLMProbError`), then checked by the spec's own ``check(value)``
    (its error becomes argparse's one line): the flag accepts and refuses exactly what the spec does."""
    what = "an integer" if parse is int else "a number"

    def convert(text: str):
        try:
            value = parse(str(text).strip())
            if check is not None:
                check(value)
        except MLMProbError as e:  # "NAME must be ..." or "NAME: ...": argparse names the flag
            head, _, rest = str(e).partition(" ")
            why = rest if rest.startswith("must ") or head.endswith(":") else str(e)
            raise argparse.ArgumentTypeError(why) from None
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        return value

    convert.__name__ = getattr(check or parse, "__name__", "checked")
    return convert


_DEVICE = re.compile(rf"auto|({'|'.join(DEVICE_TYPES)})(:\d+)?")
_DEVICE_WHAT = f"auto or a device of type {', '.join(DEVICE_TYPES)} (cuda:1: one GPU)"


def device_name(text: str) -> str:
    """A device mlmprob computes on: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; ``meta`` (no values),
    ``xla`` and the like are refused. Whether the device is there is checked when the model loads."""
    name = str(text).strip()
    if not _DEVICE.fullmatch(name):
        raise argparse.ArgumentTypeError(f"must be {_DEVICE_WHAT}, got {text!r}")
    return name


def device_list(text: str) -> str:
    """Comma-separated devices (``--devices cuda:0,cuda:1``), each a :func:`device_name`; the text is returned
    as given (:func:`mlmprob.runtime.pool.parse_devices` splits it)."""
    for part in str(text).split(","):
        if part.strip() and not _DEVICE.fullmatch(part.strip()):
            what = _DEVICE_WHAT.replace(" (cuda:1: one GPU)", "")
            raise argparse.ArgumentTypeError(f"must be devices like cuda:0,cuda:1, each {what}, got {part.strip()!r}")
    return text
