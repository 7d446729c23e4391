"""The built documentation site (``mkdocs build --strict`` into a temporary folder, once per module): the sidebar
keeps "Web app" and "Guides" is not a link to it, search boosts the recipes over the results pages, 404.html
links its assets from ``site_url`` and code blocks wrap."""

import importlib.util
import json
import os
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["", "howto/score-fasta/", "guides/scoring/", "api/", "results/"]  # home, a how-to, a guide, API, results


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_search_boost_of_each_kind_of_page():
    boost_of = _hook("hooks_search").boost_of
    assert boost_of("results/bench_pll.md") < 1 < boost_of("guides/scoring.md") < boost_of("howto/score-fasta.md")
    assert boost_of("index.md") is None and boost_of("scale.md") is None


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("material", reason="mkdocs-material is not installed (the docs extra)")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_guides_is_a_section_and_the_web_app_a_page_of_it(site):
    """navigation.indexes made docs/app/README.md (an "index" to MkDocs) the link of "Guides"; docs/hooks_nav.py
    makes it a page of the section, at the same URL."""
    html = (site / "index.html").read_text()
    nav = html[html.index('class="md-nav md-nav--primary"') :]
    guides = re.search(
        r'<label class="md-nav__link" for="(__nav_\d+)"[^>]*>\s*<span class="md-ellipsis">\s*Guides\s', nav
    )
    assert guides, "the Guides section's label is missing or is a link"
    assert not re.search(r'<a href="app/" class="md-nav__link[^"]*">\s*<span class="md-ellipsis">\s*Guides\s', nav)
    assert re.search(r'<a href="app/" class="md-nav__link">\s*<span class="md-ellipsis">\s*Web app\s', nav)
    assert (site / "app" / "index.html").is_file()


def test_search_index_carries_the_boosts(site):
    """mkdocs-material copies each page's boost into search/search_index.json, which lunr applies in the browser."""
    docs = json.loads((site / "search" / "search_index.json").read_text())["docs"]
    boosts: dict[str, set] = {}
    for d in docs:
        boosts.setdefault(d["location"].split("/")[0].split("#")[0], set()).add(d.get("boost"))
    assert boosts["results"] == {0.1}, boosts["results"]
    assert boosts["howto"] == {4.0} and boosts["guides"] == {2.0}
    assert boosts[""] == {None}  # the home page keeps the default


def test_404_page_links_its_assets_from_the_site_url(site):
    """404.html is served at any depth, so its links are absolute: under site_url's path, not the server's root."""
    yaml = pytest.importorskip("yaml")
    base = urllib.parse.urlparse(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["site_url"]).path
    html = (site / "404.html").read_text()
    assert base != "/" and f'href="{base}assets/' in html
    assert not re.search(r'(?:href|src)="/assets/', html), "404.html links /assets/, which breaks under a sub-path"


def test_code_blocks_wrap(site):
    css = (site / "stylesheets" / "extra.css").read_text()
    assert re.search(r"pre\s*>\s*code\s*\{[^}]*white-space:\s*pre-wrap", css)
    for page in PAGES:
        assert "stylesheets/extra.css" in (site / page / "index.html").read_text(), page
