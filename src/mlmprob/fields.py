"""Settings declared once: a field made with :func:`option` carries its default, help and argparse keywords, and
:func:`add_field_flags` makes its flag (``--my-option`` for ``my_option``, ``--help`` with the default). A flag left
out is absent from the parsed arguments (``argparse.SUPPRESS``): the spec's default applies. Imports no torch."""

from __future__ import annotations

import argparse
import dataclasses

#: The metadata keys handed to argparse as they are (``aliases``: more option strings, e.g. ``("-k",)``).
ARGPARSE_KEYS = ("action", "type", "choices", "metavar", "nargs")


def option(default, help: str, **meta):
    """A spec field that is also a command-line flag (``--NAME-WITH-DASHES``): ``help``, and ``type``, ``choices``,
    ``action``, ``metavar`` or ``nargs`` for argparse, ``aliases`` (more option strings, e.g. ``("-k",)``) and
    ``shown`` (the default as ``--help`` words it, e.g. ``"both"``; else the value itself, and nothing for None or
    False: "not given"), ``flag`` (the flag's name where it is not the field's, e.g. ``"--steps"`` for
    ``max_steps``). Other keys are the spec's own (``mlmprob sample``'s: ``json(spec, value)`` how a row writes
    it, ``stored(spec)`` how the run file does, both default to the value as plain JSON, ``stored=False``: not in the
    run file; ``recorded="unless default"``: not written at its default)."""
    return dataclasses.field(default=default, metadata={"help": help, **meta})


def flag_of(name: str, meta=None) -> str:
    """The flag of field ``name``: ``--my-option`` for ``my_option`` (its metadata's ``flag`` where it has one)."""
    return (meta or {}).get("flag") or "--" + name.replace("_", "-")


def default_text(value, meta=None) -> str:
    """``" (default: X)"``: ``X`` the field's ``shown`` metadata, else the value (a sequence's items joined by
    spaces); empty for None and False (the flag not given)."""
    text = (meta or {}).get("shown", " ".join(map(str, value)) if isinstance(value, (tuple, list)) else value)
    return "" if text is None or text is False else f" (default: {text})"


def flag_keywords(name: str, meta, help_text: str) -> dict:
    """argparse's keywords for the flag of field ``name``: its dest, ``default=argparse.SUPPRESS`` (left out: the
    spec's default), ``help_text`` (``%`` escaped) and the argparse keys of ``meta``."""
    kw: dict = {"dest": name, "default": argparse.SUPPRESS, "help": help_text.replace("%", "%%")}
    kw.update({k: meta[k] for k in ARGPARSE_KEYS if k in meta})
    if kw.get("action") in ("store_true", "store_false"):  # a switch: argparse takes no type or choices
        kw.pop("type", None), kw.pop("choices", None)
    elif "flag" in meta:  # its value named as argparse names a flag's own: --steps STEPS
        kw.setdefault("metavar", meta["flag"].lstrip("-").replace("-", "_").upper())
    return kw


def add_field_flags(group, spec: type, names=None, present=()) -> None:
    """Add the flags of ``spec``'s fields ``names``, in that order (None: every field declared with :func:`option`,
    in field order) to ``group`` (a parser or an argument group): help, type, choices and action from the field's
    metadata, help with its default. A flag in ``present``, left out, is the field's default rather than absent (a
    flag the command reads before it makes the spec, such as an input's ``--format``)."""
    fields = {f.name: f for f in dataclasses.fields(spec)}
    for name in names if names is not None else [n for n, f in fields.items() if "help" in f.metadata]:
        f = fields[name]  # declared with option(default, help, ...)
        kw = flag_keywords(name, f.metadata, f.metadata["help"] + default_text(f.default, f.metadata))
        if name in present:
            kw["default"] = f.default
        action = group.add_argument(flag_of(name, f.metadata), *f.metadata.get("aliases", ()), **kw)
        action.spec_field = (spec, name)  # what made it
