"""MkDocs hook (mkdocs.yml): the site search ranks the pages a reader wants first. The results pages (docs/results/,
benchmark tables and measurements) match almost any query ("score fasta" found them first), so they are boosted
down; the how-to recipes and the guides, the pages that answer a task, are boosted up. mkdocs-material's search
reads ``page.meta["search"]["boost"]`` into search/search_index.json, and lunr multiplies a page's score by it in
the browser. A page's own front matter (``search: {boost: ...}``) wins."""

from __future__ import annotations

BOOSTS = {"results/": 0.1, "howto/": 4.0, "guides/": 2.0}


def boost_of(src_uri: str) -> float | None:
    """The search boost of the page at ``src_uri`` (relative to docs/), or None for the default (1)."""
    return next((b for prefix, b in BOOSTS.items() if src_uri.startswith(prefix)), None)


def on_page_markdown(markdown: str, page, config, files) -> str:
    boost = boost_of(page.file.src_uri)
    if boost is not None:
        search = page.meta.setdefault("search", {})
        if isinstance(search, dict):
            search.setdefault("boost", boost)
    return markdown
