"""The documentation site's sources (mkdocs.yml, docs/): the API reference covers every public name and
spec, its directives name objects that exist, and every page is reachable. The build itself (``make docs``:
``mkdocs build --strict``, warnings as errors) runs in .ci/run."""

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import mlmprob

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DIRECTIVE = re.compile(r"^::: ([\w.]+)", re.M)


def _directives() -> dict[str, str]:
    """``object path -> API page`` of every mkdocstrings directive under docs/api/."""
    return {
        path: page.name for page in sorted((DOCS / "api").glob("*.md")) for path in DIRECTIVE.findall(page.read_text())
    }


def _resolve(path: str):
    """The object a directive names: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


def test_api_reference_covers_every_public_name():
    documented = set(_directives())
    tails = {p.rsplit(".", 1)[-1] for p in documented} | {p for p in documented}
    missing = [n for n in mlmprob.__all__ if n != "__version__" and n not in tails and f"mlmprob.{n}" not in tails]
    assert missing == [], f"public names without an API reference entry in docs/api/: {missing}"
    assert "mlmprob.__version__" in (DOCS / "api" / "errors.md").read_text()


def test_api_reference_covers_every_spec():
    specs = {
        m.group(1)
        for f in (ROOT / "src" / "mlmprob").rglob("*.py")
        for m in re.finditer(r"^class (\w+Spec)\b", f.read_text(), re.M)
    }
    assert {"SamplerSpec", "ScoreSpec", "LoglikSpec", "InfillSpec", "VariantsSpec", "JointsSpec"} <= specs
    tails = {p.rsplit(".", 1)[-1] for p in _directives()}
    assert sorted(specs - tails) == [], "specs without an API reference entry in docs/api/"


@pytest.mark.parametrize("path", sorted(_directives()))
def test_api_directive_names_an_object(path):
    """A renamed or moved function fails here, naming the page to fix, before the site's build does."""
    try:
        obj = _resolve(path)
    except (ImportError, AttributeError) as e:
        pytest.fail(f"docs/api/{_directives()[path]}: '::: {path}' names nothing ({e})")
    assert obj.__doc__, f"{path} has no docstring"


def _nav_pages() -> set[str]:
    yaml = pytest.importorskip("yaml")

    def walk(item):
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            for x in item:
                yield from walk(x)
        elif isinstance(item, dict):
            for x in item.values():
                yield from walk(x)

    return set(walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]))


def test_every_page_is_reachable():
    """Every Markdown page of docs/ is in the navigation, or a results page linked from the results index."""
    nav = _nav_pages()
    assert all((DOCS / p).is_file() for p in nav), [p for p in nav if not (DOCS / p).is_file()]
    results = set(re.findall(r"\]\(([^)#\s]+\.md)", (DOCS / "results" / "index.md").read_text()))
    linked = {f"results/{p}" for p in results}
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert sorted(pages - nav - linked) == [], "pages of docs/ neither in mkdocs.yml's nav nor in results/index.md"


def test_docstrings_rewritten_for_the_site():
    """docs/griffe_rst.py: doctest examples become console code blocks and roles become code spans (site only)."""
    pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("griffe_rst", DOCS / "griffe_rst.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "See :class:`~mlmprob.x.Y` and :func:`mlmprob.z`.\n>>> 1 + 1\n2\n\nAfter."
    assert module.rewrite(text) == "See `Y` and `mlmprob.z`.\n\n```pycon\n>>> 1 + 1\n2\n```\n\nAfter."


def test_home_page_links_every_guide_and_recipe():
    """Every page of the "Guides" and "How-to" sections is reachable from the home page (docs/index.md)."""
    yaml = pytest.importorskip("yaml")
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    home = set(re.findall(r"\]\(([^)#\s]+\.md)", (DOCS / "index.md").read_text()))
    for title in ("Guides", "How-to"):
        section = next(item[title] for item in nav if isinstance(item, dict) and title in item)
        pages = [next(iter(e.values())) if isinstance(e, dict) else e for e in section]
        assert sorted(set(pages) - home) == [], f"docs/index.md does not link these pages of {title}"
