"""A griffe extension for the API reference (mkdocs.yml): the docstrings are written for Python's help() and
doctest, with reStructuredText roles; for the site, doctest examples become Python console code blocks and
roles (:class:`~mlmprob.x.Y`, :func:`...`) become code spans. The source is not changed: doctests still run.

A name the API pages document (a ``::: mlmprob.x.Y`` of ``docs/api/*.md``) becomes a link to its entry (through
mkdocs-autorefs) where a docstring names it: in a role (by its path, any public path of it in the same package or
``mlmprob.Y``, or alone), or in double backticks as a dotted path (``mlmprob.sample``), a class or constant
(``SamplerSpec``) or a call (``sample()``); a lowercase bare word in double backticks stays code (it is as often
a setting or a value: ``energy``, ``loglik``). The pages hide private bases (``class A(_Base)``)."""

from __future__ import annotations

import re
from pathlib import Path

import griffe

ROLE = re.compile(r":(?:class|func|meth|data|mod|attr|exc|obj):`(~?)([^`]+)`")
TICKS = re.compile(r"``([A-Za-z_][\w.]*)(\(\))?``")
PROMPT = re.compile(r"^(\s*)>>> ")
DIRECTIVE = re.compile(r"^::: (mlmprob(?:\.\w+)+)[ \t]*$", re.M)
API = Path(__file__).resolve().parent / "api"


def documented(folder: Path = API) -> frozenset[str]:
    """The paths the API pages document: their ``::: PATH`` directives."""
    return frozenset(p for page in sorted(folder.glob("*.md")) for p in DIRECTIVE.findall(page.read_text("utf-8")))


def _public() -> list[str]:
    """``mlmprob.__all__`` (importing mlmprob is light: its names load on first use)."""
    import mlmprob

    return mlmprob.__all__


class Links:
    """Where each documented name links to: ``target(name)`` is its documented path, or None."""

    def __init__(self, paths: frozenset[str]):
        self.paths = paths
        self.by_name: dict[str, list[str]] = {}
        for p in sorted(paths):
            self.by_name.setdefault(p.rsplit(".", 1)[-1], []).append(p)

    def target(self, name: str) -> str | None:
        if name in self.paths:
            return name
        found = self.by_name.get(name.rsplit(".", 1)[-1], [])
        if "." in name:  # a public path of a documented object: mlmprob.NAME, or in the same package
            parts = name.split(".")
            top = len(parts) == 2 and parts[1] in _public()
            found = [p for p in found if parts[0] == "mlmprob" and (top or p.split(".")[1] == parts[1])]
        return found[0] if len(found) == 1 else None

    def role(self, m: re.Match) -> str:
        path = m.group(2)
        shown = f"`{path.rsplit('.', 1)[-1] if m.group(1) else path}`"
        to = self.target(path)
        return f"[{shown}][{to}]" if to else shown

    def ticks(self, m: re.Match) -> str:
        name, call = m.group(1), m.group(2)
        if "." not in name and not call and not name[0].isupper():
            return m.group(0)
        to = self.target(name)
        return f"[{m.group(0)}][{to}]" if to else m.group(0)

    def __call__(self, text: str) -> str:
        """``text`` with its roles as code spans, linked (with the names in double backticks) where documented;
        doctest lines are left as they are."""
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if not line.lstrip().startswith((">>>", "...")):
                lines[i] = TICKS.sub(self.ticks, ROLE.sub(self.role, line))
        return "\n".join(lines)


def _fence_doctests(text: str) -> str:
    """Each run of ``>>>`` lines with their continuations and output, up to a blank line, in a pycon block."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = PROMPT.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group(1)
        block = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        if out and out[-1].strip():
            out.append("")
        out += [indent + "```pycon", *(indent + b for b in block), indent + "```"]
    return "\n".join(out)


def rewrite(text: str, links: Links | None = None) -> str:
    """The docstring ``text`` as Markdown for the site (its documented names linked by ``links``)."""
    return _fence_doctests((links or Links(frozenset()))(text))


class DocstringsForTheSite(griffe.Extension):
    def __init__(self, api: str | None = None) -> None:
        """``api``: the folder of the API pages (default: ``docs/api`` beside this file)."""
        self.links = Links(documented(Path(api) if api else API))

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value, self.links)

    def on_class_instance(self, *, cls: griffe.Class, **kwargs) -> None:
        cls.bases = [b for b in cls.bases if not str(b).rsplit(".", 1)[-1].startswith("_")]
