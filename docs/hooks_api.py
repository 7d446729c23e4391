"""MkDocs hook of the API reference (mkdocs.yml): after each ``::: NAME`` of a page under ``api/`` whose object is a
spec (a dataclass deriving from :class:`mlmprob.settings.Spec`), or a function whose ``spec`` parameter is one, a
table of the spec's settings: name, type, default, the command-line flag that sets it and one line on what it does.
The line is the field's own ``help`` where it declares one, else the help of the flag of that name (``mlmprob
COMMAND --help``, the command of the spec's package first). Everything comes from the fields and the parsers; nothing
is written twice."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import inspect
import re

DIRECTIVE = re.compile(r"^::: (mlmprob(?:\.\w+)+)[ \t]*$", re.M)

#: the command whose flags document a package's settings first (a flag of the same name in another command after)
COMMAND_OF = {
    "sampling": "sample",
    "designing": "design",
    "infilling": "infill",
    "variants": "variants",
    "joints": "joints",
    "scoring": "score",
    "likelihood": "score",
    "energies": "score",
    "onepass": "score",
}


def resolve(path: str):
    """The object named ``path`` (``package.module.Name``), or None."""
    module, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def spec_class(obj):
    """``obj`` if it is a spec class; a function's spec class (its ``spec`` parameter's annotation); else None."""
    from mlmprob.settings import Spec

    if inspect.isclass(obj):
        return obj if issubclass(obj, Spec) and dataclasses.is_dataclass(obj) else None
    if not callable(obj):
        return None
    try:
        param = inspect.signature(obj).parameters.get("spec")
    except (TypeError, ValueError):
        return None
    if param is None or param.annotation is inspect.Parameter.empty:
        return None
    names = re.findall(r"\w+Spec\b", str(param.annotation))
    module = importlib.import_module(obj.__module__)
    for n in names:
        cls = getattr(module, n, None)
        if inspect.isclass(cls) and issubclass(cls, Spec):
            return cls
    return None


@functools.cache
def flags() -> dict[str, list[tuple[str, argparse.Action]]]:
    """Every command's flags by destination: ``dest -> [(command, action), ...]``."""
    from mlmprob.cli import build_parser

    out: dict[str, list[tuple[str, argparse.Action]]] = {}
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                for a in sub._actions:
                    if a.option_strings and a.help not in (None, argparse.SUPPRESS):
                        out.setdefault(a.dest, []).append((command, a))
    return out


def _plain(text: str) -> str:
    """One Markdown table cell: reST's double backticks as code, ``%(default)s`` dropped, no pipes or newlines."""
    text = re.sub(r"\s*\(default:? %\(default\)s\)", "", text).replace("%(default)s", "")
    text = text.replace("``", "`").replace("|", "\\|")
    return " ".join(text.split())


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    return f"`{value!r}`"


def settings_table(cls) -> str:
    """The Markdown table of the settings of the spec class ``cls``."""
    package = cls.__module__.split(".")[1] if cls.__module__.count(".") else ""
    first = COMMAND_OF.get(package)
    lines = [
        f"**Settings of `{cls.__name__}`** (keyword overrides by name):",
        "",
        "| setting | type | default | flag | what it does |",
        "|---|---|---|---|---|",
    ]
    for f in dataclasses.fields(cls):
        found = sorted(flags().get(f.name, []), key=lambda ca: ca[0] != first)
        flag = f"`{found[0][1].option_strings[-1]}`" if found else ""
        help_text = f.metadata.get("help") or (found[0][1].help if found else "") or ""
        kind = str(f.type).replace("|", "or")
        lines.append(f"| `{f.name}` | `{kind}` | {_default(f)} | {flag} | {_plain(str(help_text))} |")
    return "\n".join(lines) + "\n"


def with_tables(markdown: str) -> str:
    """``markdown`` with a settings table after each directive of a spec, or of a function taking one."""

    on_page = set(DIRECTIVE.findall(markdown))

    def add(m: re.Match) -> str:
        obj = resolve(m.group(1))
        cls = spec_class(obj)
        if cls is None:
            return m.group(0)
        if obj is not cls and f"{cls.__module__}.{cls.__name__}" in on_page:  # a function whose spec is below
            return f"{m.group(0)}\n\nIts settings (keyword overrides by name): the table of `{cls.__name__}` below.\n"
        return f"{m.group(0)}\n\n{settings_table(cls)}"

    return DIRECTIVE.sub(add, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if not page.file.src_uri.startswith("api/"):
        return markdown
    return with_tables(markdown)
