"""The API reference's settings tables (docs/hooks_api.py, issue 51 item 6): every spec on an ``api/`` page, and
every function that takes one, shows the spec's fields with their defaults and flags, made from the fields."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location("hooks_api", DOCS / "hooks_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hook_is_registered():
    assert "docs/hooks_api.py" in (DOCS.parent / "mkdocs.yml").read_text()


def test_every_spec_on_an_api_page_gets_a_table_of_all_its_fields(hooks):
    seen = set()
    for page in sorted((DOCS / "api").glob("*.md")):
        text = page.read_text()
        out = hooks.with_tables(text)
        for path in hooks.DIRECTIVE.findall(text):
            obj = hooks.resolve(path)
            assert obj is not None, f"{page.name}: {path} does not resolve"
            cls = hooks.spec_class(obj)
            if cls is None or obj is not cls:
                continue
            seen.add(cls.__name__)
            table = out.split(f"::: {path}\n", 1)[1].split("\n\n::: ", 1)[0]
            for f in dataclasses.fields(cls):
                row = re.search(rf"^\| `{f.name}` \|[^\n]*$", table, re.M)
                assert row, f"{page.name}: {cls.__name__}.{f.name} has no row"
                if f.default is not dataclasses.MISSING:
                    assert f"`{f.default!r}`" in row.group(0), f"{cls.__name__}.{f.name}: default not shown"
    assert {"DesignSpec", "SamplerSpec", "MHSpec", "InfillSpec", "VariantsSpec", "JointsSpec", "ScoreSpec"} <= seen


def test_a_field_shows_its_flag_and_help(hooks):
    from mlmprob.designing import DesignSpec

    table = hooks.settings_table(DesignSpec)
    row = next(line for line in table.splitlines() if line.startswith("| `chains` |"))
    assert "`4`" in row and "`--chains`" in row and "chains" in row.split("|")[5]
    assert "``" not in table and "%(default)s" not in table


def test_a_function_taking_a_spec_points_to_its_table(hooks):
    out = hooks.with_tables("::: mlmprob.designing.api.design\n\n::: mlmprob.designing.spec.DesignSpec\n")
    assert "the table of `DesignSpec` below" in out and out.count("**Settings of `DesignSpec`**") == 1
    alone = hooks.with_tables("::: mlmprob.designing.api.design\n")
    assert "**Settings of `DesignSpec`**" in alone
    assert hooks.with_tables("::: mlmprob.errors.MLMProbError\n") == "::: mlmprob.errors.MLMProbError\n"
