"""A griffe extension for the API reference (mkdocs.yml): the docstrings are written for Python's help() and
doctest, with reStructuredText roles; for the site, doctest examples become Python console code blocks and
roles (:class:`~mlmprob.x.Y`, :func:`...`) become code spans. The source is not changed: doctests still run."""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:class|func|meth|data|mod|attr|exc|obj):`(~?)([^`]+)`")
PROMPT = re.compile(r"^(\s*)>>> ")


def _role(m: re.Match) -> str:
    target = m.group(2)
    return f"`{target.rsplit('.', 1)[-1] if m.group(1) else target}`"


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


def rewrite(text: str) -> str:
    """The docstring ``text`` as Markdown for the site."""
    return _fence_doctests(ROLE.sub(_role, text))


class DocstringsForTheSite(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
