"""The built documentation site (``mkdocs build --strict`` into a temporary folder, once per module): the sidebar
keeps "Web app" and "Guides" is not a link to it, search boosts the recipes over the results pages, 404.html links
its assets from ``site_url``, code blocks wrap; and in headless Chromium (skipped without chromium and
chromedriver) five pages render, every link and image inside the site answers HTTP 200 and a search for "score
fasta" ranks the recipe first."""

import contextlib
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from chromium import NEEDS_CHROMIUM, browser

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["", "howto/score-fasta/", "guides/scoring/", "api/", "results/"]  # home, a how-to, a guide, API, results


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def test_search_boost_of_each_kind_of_page():
    boost_of = _hook("hooks_search").boost_of
    assert boost_of("results/bench_pll.md") < 1 < boost_of("guides/scoring.md") < boost_of("howto/score-fasta.md")
    assert boost_of("index.md") is None and boost_of("scale.md") is None


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


# --- in a browser ---


@contextlib.contextmanager
def _served(folder: Path):
    """``python -m http.server`` on a free local port, serving ``folder``; stopped on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/"
        for _ in range(100):
            try:
                urllib.request.urlopen(base, timeout=2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@NEEDS_CHROMIUM
def test_pages_render_and_their_links_resolve(site, tmp_path):
    links = (
        "return [...document.querySelectorAll('a[href]')].map(a => a.href).concat([...document.images].map(i => i.src))"
    )
    clipped = (
        "return [...document.querySelectorAll('pre > code')].filter(c => c.scrollWidth > c.clientWidth + 1).length"
    )
    with _served(site) as base:
        driver = browser(1280, 1500)
        try:
            seen: dict[str, list[str]] = {}
            for i, page in enumerate(PAGES):
                driver.get(base + page)
                assert driver.title and "404" not in driver.title, (page, driver.title)
                assert driver.find_elements("css selector", "nav.md-nav--primary"), page
                driver.save_screenshot(str(tmp_path / f"page{i}.png"))
                assert (tmp_path / f"page{i}.png").stat().st_size > 0
                assert driver.execute_script(clipped) == 0, f"{page}: a code block is clipped"
                for url in driver.execute_script(links):
                    if url.startswith(base):
                        seen.setdefault(url.split("#")[0], []).append(page or "home")
            driver.get(base)  # the search as a reader types it: lunr ranks in the browser, with the boosts
            box = driver.find_element("css selector", "input.md-search__input")
            box.click()
            box.send_keys("score fasta")
            hits: list[str] = []
            for _ in range(100):
                hits = [
                    a.get_attribute("href")
                    for a in driver.find_elements("css selector", "li.md-search-result__item > a")
                ]
                if hits:
                    break
                time.sleep(0.2)
            assert hits and hits[0] == base + "howto/score-fasta/", hits[:5]
            assert not any("/results/" in h for h in hits[:5]), hits[:5]
        finally:
            driver.quit()
        assert len(seen) > 50
        broken = {url: pages for url, pages in seen.items() if _status(url) != 200}
    assert broken == {}, f"links inside the site that do not answer 200: {broken}"
