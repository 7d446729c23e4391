"""The how-to recipes (docs/howto/) run as written: every bash and python block of a page, verbatim and in order,
in an empty temporary folder (so an example that reads a file its page did not write fails), with the embedded
AntiBERTy and no network. A block marked ``<!-- howto: not run (REASON) -->`` on the line before it (one that
needs a cluster) is skipped explicitly, with its reason."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_guide_examples import _blocks as guide_blocks
from test_guide_examples import _env

HOWTO = Path(__file__).resolve().parents[2] / "docs" / "howto"
BLOCK = re.compile(
    r"(?:^<!-- howto: not run \((?P<why>[^\n]*)\) -->\n)?^```(?P<lang>bash|python)\n(?P<code>.*?)^```", re.S | re.M
)
PAGES = sorted(p.name for p in HOWTO.glob("*.md") if p.name != "index.md")


def _blocks(text: str) -> list[tuple[str, str, str | None]]:
    return guide_blocks(text, BLOCK)


def _run_block(lang: str, code: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = ["bash", "-euo", "pipefail", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)


def test_the_runner_fails_on_a_file_the_page_did_not_write(tmp_path):
    """The check has teeth: a recipe reading an input it never wrote fails in the empty folder."""
    page = "```bash\nmlmprob score antibodies.fasta --no-progress --out scores.tsv\n```\n"
    ((lang, code, why),) = _blocks(page)
    assert why is None and _run_block(lang, code, tmp_path).returncode != 0


def test_every_recipe_is_in_the_index_and_the_navigation():
    yaml = pytest.importorskip("yaml")
    index = (HOWTO / "index.md").read_text()
    assert PAGES and all(f"]({p})" in index for p in PAGES), "a how-to page the index does not link"
    nav = yaml.safe_load((HOWTO.parents[1] / "mkdocs.yml").read_text())["nav"]
    titles = [next(iter(item)) for item in nav if isinstance(item, dict)]
    assert titles.index("How-to") < titles.index("Guides"), "the How-to section comes before the guides"
    section = str(next(item["How-to"] for item in nav if isinstance(item, dict) and "How-to" in item))
    assert all(f"howto/{p}" in section for p in [*PAGES, "index.md"]), section


@pytest.mark.parametrize("page", PAGES)
def test_recipe_blocks_are_self_contained(page):
    """No shared data, no test files, no sequence cut with ``...``: what a new user can paste."""
    blocks = _blocks((HOWTO / page).read_text())
    assert blocks, f"{page} has no example"
    for _, code, _ in blocks:
        assert "../shared" not in code and "tests/" not in code and "..." not in code, code


@pytest.mark.parametrize("page", PAGES)
def test_recipe_runs_as_written(page, tmp_path):
    """Each page's runnable blocks in order in one empty folder; each must exit 0."""
    for i, (lang, code, why) in enumerate(_blocks((HOWTO / page).read_text())):
        if why is not None:
            continue
        done = _run_block(lang, code, tmp_path)
        assert done.returncode == 0, f"{page}, block {i + 1} ({lang}) failed:\n{code}\n{done.stderr[-3000:]}"
        if lang == "bash" and re.search(r"^cat [^>]", code, re.M):  # a page that shows a file shows it
            assert done.stdout.strip(), f"{page}, block {i + 1} printed nothing"


def _marked() -> list[tuple[str, int, str]]:
    return [
        (page, i + 1, why)
        for page in PAGES
        for i, (_, _, why) in enumerate(_blocks((HOWTO / page).read_text()))
        if why is not None
    ]


@pytest.mark.parametrize(("page", "block", "why"), _marked())
def test_recipe_block_needing_a_cluster(page, block, why):
    """Listed, so the report names each block not run and why."""
    assert why.strip()
    pytest.skip(f"{page}, block {block}: {why}")
