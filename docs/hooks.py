"""MkDocs hooks of the documentation site (mkdocs.yml): the changelog page is the repository's CHANGELOG.md
(one file, read at build time), its links into docs/ made relative to the site."""

from __future__ import annotations

import re
from pathlib import Path

MARKER = "<!-- CHANGELOG.md -->"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    text = (Path(config["config_file_path"]).parent / "CHANGELOG.md").read_text()
    text = re.sub(r"\]\(docs/", "](", text)
    return markdown.replace(MARKER, text.split("\n", 1)[1] if text.startswith("# ") else text)
