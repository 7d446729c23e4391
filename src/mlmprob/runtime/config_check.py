"""The comparison a resumed run makes: the stored configuration against this run's (:func:`check_config`, one error
naming every differing key), and what an older output keeps of a newer run's configuration (:func:`as_stored`)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..errors import MLMProbError
from ..jsonl import dumps
from .identity import KEY as IDENTITY

_SHOWN = 60  # characters of a value shown in an error


class ConfigMismatch(MLMProbError):
    """A resumed run's configuration differs from the one its output was written with."""


def normalized(value):
    """``value`` as it reads back from the file (tuples become lists, NaN None)."""
    return json.loads(dumps(value))


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def config_diff(stored: dict, config: dict, prefix: str = "") -> list[tuple[str, object, object]]:
    """``(key, stored value, this run's value)`` for every differing key; nested dicts by dotted keys."""
    out = []
    for k in sorted(set(stored) | set(config), key=str):
        a, b = stored.get(k), config.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += config_diff(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append((f"{prefix}{k}", a, b))
    return out


def check_command(where, stored: dict | None, config: dict | None) -> None:
    """Refuse, in one line, a resumed output written by another command (``score``'s resumed by ``design``), before
    its input, weights or options are compared (each of which would differ and mislead)."""
    was, now = (stored or {}).get("command"), (config or {}).get("command")
    if was is not None and now is not None and was != now:
        raise ConfigMismatch(
            f"cannot resume {where}: it holds results of mlmprob {was}, not of mlmprob {now}; choose another --out"
        )


def check_config(where, stored: dict | None, config: dict | None, keys: Iterable[str] | None = None) -> None:
    """The one check a resumed run makes: ``config`` must equal the ``stored`` one (on ``keys`` only, when given),
    else :class:`ConfigMismatch` naming every differing key with both values; nothing is checked when either is
    empty (an output written before configurations were stored)."""
    if not stored or not config:
        return
    check_command(where, stored, config)
    stored, config = normalized(stored), normalized(config)
    for d in (stored, config):  # the run's identity has its own rule (runtime.identity.check_resume)
        d.pop(IDENTITY, None)
    if keys is not None:
        keys = set(keys)
        stored, config = ({k: v for k, v in d.items() if k in keys} for d in (stored, config))
    if diff := config_diff(stored, config):
        was = ", ".join(f"{k}={_show(a)}" for k, a, _ in diff)
        now = ", ".join(f"{k}={_show(b)}" for k, _, b in diff)
        raise ConfigMismatch(
            f"cannot resume {where}: it holds results of a different configuration, written with "
            f"{was}; this run has {now}; use the same options or another --out"
        )


# configuration keys stored only by newer versions: runtime.provenance's block, score's one-pass correction digest,
# runtime.identity's block
LATER_KEYS = ("computed_with", "correction_sha256", IDENTITY)
LATER_BLOCK = ("batch_tokens", "threads")  # keys of computed_with stored since issue 49 (int8 stored its budget before)


def as_stored(stored: dict | None, config: dict | None) -> dict | None:
    """``config`` as an existing output written with ``stored`` keeps it: without the :data:`LATER_KEYS` that
    ``stored`` lacks (nor the :data:`LATER_BLOCK` keys its ``computed_with`` lacks): such an output is checked on
    the keys it has and does not gain them (it cannot vouch for its earlier rows)."""
    if not stored or not config:
        return config
    block, kept = config.get(LATER_KEYS[0]), stored.get(LATER_KEYS[0])
    if isinstance(block, dict) and isinstance(kept, dict) and any(k in block and k not in kept for k in LATER_BLOCK):
        config = {**config, LATER_KEYS[0]: {k: v for k, v in block.items() if k in kept or k not in LATER_BLOCK}}
    if not any(k in config and k not in stored for k in LATER_KEYS):
        return config
    return {k: v for k, v in config.items() if k in stored or k not in LATER_KEYS}
