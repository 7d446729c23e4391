"""The API reference's cross-references (docs/griffe_rst.py, issue 51 item 6): a name a docstring mentions (a role,
a dotted path or a class in double backticks) links to its entry where the API pages document it, and private
bases are not shown. The site test builds a one-page site with the real mkdocstrings settings (seconds, not the
whole site's minutes)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rst():
    spec = importlib.util.spec_from_file_location("griffe_rst", ROOT / "docs" / "griffe_rst.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_documented_names_link_and_others_stay_code(rst):
    links = rst.Links(frozenset({"mlmprob.sampling.api.sample", "mlmprob.sampling.registry.SamplerSpec"}))
    assert links(":func:`~mlmprob.sampling.sample`") == "[`sample`][mlmprob.sampling.api.sample]"
    assert links("``mlmprob.sample``") == "[``mlmprob.sample``][mlmprob.sampling.api.sample]"
    assert links("``SamplerSpec``, ``sample()``") == (
        "[``SamplerSpec``][mlmprob.sampling.registry.SamplerSpec], [``sample()``][mlmprob.sampling.api.sample]"
    )
    # not documented, another package's name, a lowercase word (a setting as often), a doctest line: as they were
    assert links(":class:`~mlmprob.sampling.api.Chains`") == "`Chains`"
    kept = "``mlmprob.joints.sample``, ``sample``, ``energy``"
    assert links(kept) == kept
    assert links(">>> ``SamplerSpec``") == ">>> ``SamplerSpec``"


def test_the_documented_names_are_the_api_pages_directives(rst):
    paths = rst.documented()
    assert {"mlmprob.models.reader.Reader", "mlmprob.sampling.api.sample", "mlmprob.settings.Spec"} <= paths
    assert len({p.rsplit(".", 1)[-1] for p in paths}) == len(paths), "two documented objects share a name"


def test_private_bases_are_hidden(rst, tmp_path):
    griffe = pytest.importorskip("griffe")
    (tmp_path / "demo_bases.py").write_text("class _Base:\n    pass\n\n\nclass Shown(_Base, dict):\n    pass\n")
    ext = rst.DocstringsForTheSite(api=str(tmp_path))
    module = griffe.load("demo_bases", search_paths=[str(tmp_path)], extensions=griffe.load_extensions(ext))
    assert [str(b) for b in module["Shown"].bases] == ["dict"]


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    """The HTML of a one-page site: ``reader_of`` and ``Reader``, whose docstrings name each other, and
    ``SampleResult`` (a private base)."""
    yaml = pytest.importorskip("yaml")
    pytest.importorskip("mkdocstrings")
    pytest.importorskip("material", reason="mkdocs-material is not installed (the docs extra)")
    tmp = tmp_path_factory.mktemp("api_links")
    (tmp / "docs" / "api").mkdir(parents=True)
    names = ["mlmprob.models.reader.reader_of", "mlmprob.models.reader.Reader", "mlmprob.sampling.api.SampleResult"]
    (tmp / "docs" / "api" / "index.md").write_text("# API\n\n" + "".join(f"::: {n}\n\n" for n in names))
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    (handler,) = (p["mkdocstrings"] for p in config["plugins"] if isinstance(p, dict) and "mkdocstrings" in p)
    python = handler["handlers"]["python"]
    python["paths"] = [str(ROOT / "src")]
    (ext,) = python["options"]["extensions"]
    assert ext == "docs/griffe_rst.py:DocstringsForTheSite"
    python["options"]["extensions"] = [{str(ROOT / ext): {"api": str(tmp / "docs" / "api")}}]
    config.update(docs_dir=str(tmp / "docs"), site_dir=str(tmp / "site"), nav=["api/index.md"])
    config["plugins"] = [{"mkdocstrings": handler}]
    for key in ("hooks", "extra_css", "exclude_docs", "not_in_nav"):
        config.pop(key, None)
    (tmp / "mkdocs.yml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(tmp / "mkdocs.yml")]
    done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return (tmp / "site" / "api" / "index.html").read_text()


def test_a_cross_reference_renders_as_a_link(page):
    """``reader_of``'s docstring names :class:`~mlmprob.models.reader.Reader`: a link to its entry on the page."""
    assert 'id="mlmprob.models.reader.Reader"' in page
    doc = page.split('id="mlmprob.models.reader.reader_of"', 1)[1].split('id="mlmprob.models.reader.Reader"', 1)[0]
    assert re.search(r'<a[^>]*href="#mlmprob\.models\.reader\.Reader"[^>]*>\s*<code>Reader</code>', doc), doc[-3000:]


def test_a_private_base_is_not_on_the_page(page):
    assert 'id="mlmprob.sampling.api.SampleResult"' in page
    assert "_DrawsOnly" not in page
