"""The README: its first two commands, its Python examples run (on the faster sapiens-vh model, one MH epoch),
its length and its links into the documentation site."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


MAKEFILE = README.parent / "Makefile"


def _first_commands(text: str) -> list[str]:
    """The commands of the README's first code block (comments dropped)."""
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", text, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def _recipe(target: str) -> str:
    """The recipe lines of a Makefile target, and its prerequisites' (one level)."""
    text = MAKEFILE.read_text()
    m = re.search(rf"^{target}:([^\n]*)\n((?:\t[^\n]*\n)*)", text, re.M)
    assert m, f"the Makefile has no target {target!r}"
    return m.group(1) + "\n" + m.group(2)


def test_readme_first_two_commands_are_the_demo_and_the_tests():
    """The README's first two commands are Makefile targets that install everything and run, offline, the
    main job on the default (embedded) model and the test suite that CI runs."""
    assert _first_commands(README.read_text())[:2] == ["make demo", "make test"]
    demo, tests = _recipe("demo"), _recipe("test")
    assert "$(STAMP)" in demo and "$(STAMP)" in tests  # both install first
    assert "HF_HUB_OFFLINE=1" in demo and "mlmprob demo" in demo  # offline, the main job
    assert "HF_HUB_OFFLINE=1" in tests and "-m pytest" in tests
    ci = (README.parent / ".ci" / "run").read_text()
    assert ci.rstrip().splitlines()[-1] == "make test"  # CI runs the README's test command


def test_readme_python_examples_run():
    """The README's two Python examples (scoring, then MH sampling); the joints and infilling lines that were
    here are the guides' examples now, run by tests/docs/test_guides.py with the same assertions."""
    text = README.read_text()
    assert _first_commands(text) == ["make demo", "make test"]
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    code = blocks[0].replace('"antiberty"', '"sapiens-vh"') + "\n" + blocks[1].replace("epochs=10", "epochs=1")
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)
    assert ns["pll"].shape == (2,) and (ns["pll"] < 0).all()
    assert ns["ll"].shape == (2,) and (ns["ll"] < 0).all()  # a log-probability
    assert ns["r"].samples.shape[1:] == (4, ns["enc"].input_ids.shape[1])


def _guides() -> list[str]:
    """The guide pages of the site's navigation (mkdocs.yml, section "Guides"), as paths under docs/."""
    yaml = pytest.importorskip("yaml")
    nav = yaml.safe_load((README.parent / "mkdocs.yml").read_text())["nav"]
    section = next(item["Guides"] for item in nav if isinstance(item, dict) and "Guides" in item)
    return [next(iter(entry.values())) if isinstance(entry, dict) else entry for entry in section]


def test_readme_is_short_and_links_every_guide():
    """A README a new user reads in five minutes: at most 200 lines, linking every guide of the site."""
    text = README.read_text()
    assert len(text.splitlines()) <= 200, f"README.md has {len(text.splitlines())} lines, more than 200"
    links = set(re.findall(r"\]\(([^)#\s]+)", text))
    guides = _guides()
    assert len(guides) >= 8
    missing = [g for g in guides if f"docs/{g}" not in links]
    assert missing == [], f"README.md does not link these guides of mkdocs.yml: {missing}"
    for link in links:  # every relative link of the README points at a file of the repository
        if not link.startswith(("http://", "https://")):
            assert (README.parent / link).exists(), f"README.md links {link}, which does not exist"
