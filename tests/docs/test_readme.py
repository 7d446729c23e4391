"""The README: its first two commands and the Makefile recipes behind them, its Python examples run as written
(what they print, checked against the outputs their comments show), its length and its links into the
documentation site."""

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
    """The prerequisites and recipe lines of a Makefile target (``$(STAMP)`` for a variable's target)."""
    text = MAKEFILE.read_text()
    m = re.search(rf"^{re.escape(target)}:([^\n]*)\n((?:\t[^\n]*\n)*)", text, re.M)
    assert m, f"the Makefile has no target {target!r}"
    return m.group(1) + "\n" + m.group(2)


def test_readme_first_two_commands_are_the_demo_and_the_tests():
    """The README's first two commands are Makefile targets that install what they need and run, offline, the
    main job on the default (embedded) model and the test suite that CI runs."""
    assert _first_commands(README.read_text())[:2] == ["make demo", "make test"]
    demo, tests = _recipe("demo"), _recipe("test")
    assert "$(STAMP)" in demo.splitlines()[0] and "$(DEV_STAMP)" in tests.splitlines()[0]  # both install first
    assert "HF_HUB_OFFLINE=1" in demo and "mlmprob demo" in demo  # offline, the main job
    assert "HF_HUB_OFFLINE=1" in tests and "-m pytest" in tests
    ci = (README.parent / ".ci" / "run").read_text()
    assert ci.rstrip().splitlines()[-1] == "make test"  # CI runs the README's test command


def test_make_demo_installs_no_test_tools_and_make_test_adds_them():
    """``make demo`` installs torch and the package without extras (no pytest, Ray, gradio, mypy, ...); ``make
    test`` adds the dev extra and Sapiens to the same .venv through a stamp of its own, so ``make demo`` then ``make
    test`` works; TORCH_INDEX (empty by default, documented) picks the index torch comes from."""
    base, dev = _recipe("$(STAMP)"), _recipe("$(DEV_STAMP)")
    installs = [line for line in base.splitlines() if "pip install" in line]
    assert not any("dev" in line or "sapiens" in line for line in installs), installs
    assert any(line.rstrip().endswith("pip install -q -e .") for line in installs), installs  # no extra
    torch_line = next(line for line in installs if "$(TORCH_SPEC)" in line)
    assert "$(if $(TORCH_INDEX),--index-url" in torch_line
    assert "$(STAMP)" in dev.splitlines()[0]  # the dev install builds on the demo's
    assert '-e ".[dev]"' in dev and '--no-deps "sapiens==1.0.5"' in dev
    text = MAKEFILE.read_text()
    assert re.search(r"^TORCH_INDEX \?=\s*$", text, re.M)  # empty: PyPI
    comments = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cpu" in comments
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cpu" in README.read_text()  # the README says how too


def test_readme_python_examples_run_as_written(capsys):
    """The README's two Python examples (scoring, then MH sampling), run as written, one after the other as a
    reader pastes them, on the embedded AntiBERTy: each prints what it computes (named), the outputs its comments
    show (the same bits on one thread as on two: MKL's strict mode). (The joints and infilling lines that were here are the guides' examples now, run
    by tests/docs/test_guides.py.) Their wall times on the 2-core machine are in CHANGELOG.md (issue 52)."""
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    ns: dict = {}
    printed = []
    for block in blocks:
        exec(compile(block, "README.md", "exec"), ns)
        printed.append(capsys.readouterr().out.splitlines())
    assert ns["pll"].shape == (2,) and (ns["pll"] < 0).all()
    assert ns["ll"].shape == (2,) and (ns["ll"] < 0).all()  # a log-probability
    shown = re.findall(r"^print\((.*?)\)\s+# (.*)$", blocks[0], re.M)
    assert len(shown) == len(printed[0]) == 2
    for (_, want), got in zip(shown, printed[0]):
        assert got.endswith(want), (got, want)
    r = ns["r"]
    assert r.samples.shape == (4, 3, ns["enc"].input_ids.shape[1]) and r.energy_local.shape == (5, 3)
    assert re.fullmatch(r"DGF became: \['[A-Z]{3}', '[A-Z]{3}', '[A-Z]{3}'\]", printed[1][0])
    assert re.fullmatch(
        r"acceptance \d\.\d\d, last E_local \[.*\], ESS \S+, R-hat \S+, \d+ forward rows", printed[1][1]
    )
    assert printed[1] == re.findall(r"^#   (.*)$", blocks[1], re.M)  # what its "# prints:" comment shows


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
