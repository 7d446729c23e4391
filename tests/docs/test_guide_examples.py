"""Every guide's examples run as written (issue 52, "the first hour of a new user"): the python and bash blocks of
each page of docs/guides/, of docs/getting-started.md and of the README, verbatim (no substitution) and in order, in one process per
page (the python blocks share one namespace, as a notebook does; bash blocks run in between, with ``bash -eu``: a
failing command fails, and a pipe is judged by its last command, as in a user's shell), in an empty temporary folder,
with the installed ``mlmprob`` first on PATH and no network. An example that reads a file its page did not
write, or a model that is not installed, fails. A block marked ``<!-- example: not run (REASON) -->`` on the line
before it (an install, a cluster, a GPU, your own model) is skipped explicitly, with its reason. Each run block prints
what it computes; the seconds each took are in the failure message and in the ``-rA`` report."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(
    r"(?:^<!-- example: not run \((?P<why>[^\n]*)\) -->\n)?^```(?P<lang>bash|python)\n(?P<code>.*?)^```", re.S | re.M
)
PAGES = sorted(f"guides/{p.name}" for p in (DOCS / "guides").glob("*.md")) + ["getting-started.md", "../README.md"]

RUNNER = r"""
import contextlib, io, json, resource, subprocess, sys, time
blocks, report = json.load(sys.stdin), sys.argv[1]
ns, done = {"__name__": "__main__"}, []
def cpu():
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))
for i, (lang, code) in enumerate(blocks):
    t0, c0, out = time.perf_counter(), cpu(), io.StringIO()
    if lang == "python":
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"block {i + 1}", "exec"), ns)
        printed = out.getvalue()
    else:
        p = subprocess.run(["bash", "-eu", "-c", code], capture_output=True, text=True)  # no pipefail: a shell's default
        printed = p.stdout + p.stderr
        if p.returncode:
            sys.stderr.write(p.stderr[-3000:])
            sys.exit(f"block {i + 1} (bash) exited {p.returncode}")
    sys.stdout.write(printed)
    done.append([round(time.perf_counter() - t0, 1), bool(printed.strip()), round(cpu() - c0, 1)])
    with open(report, "w") as f:
        json.dump(done, f)
"""


def _blocks(text: str, block: re.Pattern = BLOCK) -> list[tuple[str, str, str | None]]:
    """``(language, code, reason not run or None)`` of every bash and python block, in order (``block``: the pattern
    of a block and of its not-run mark; the how-tos mark theirs ``howto:``)."""
    return [(m["lang"], m["code"], m["why"]) for m in block.finditer(text)]


def _env() -> dict:
    """The user's shell after ``pip install``: the venv's ``mlmprob`` and ``python`` first on PATH, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLMPROB_", "PYTEST"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _run_page(text: str, cwd: Path) -> tuple[subprocess.CompletedProcess, list, list[str]]:
    """Run a page's runnable blocks in ``cwd``: ``(process, [[seconds, printed, CPU seconds], ...] per block run, their
    code)``."""
    runnable = [(lang, code) for lang, code, why in _blocks(text) if why is None]
    report = cwd.parent / f"{cwd.name}.report.json"
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(report)],
        input=json.dumps(runnable),
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    return done, json.loads(report.read_text()) if report.exists() else [], [code for _, code in runnable]


def test_the_runner_fails_on_a_file_the_page_did_not_write(tmp_path):
    """The check has teeth: an example reading an input it never wrote fails in the empty folder."""
    (tmp_path / "run").mkdir()
    page = "```bash\nmlmprob score antibodies.fasta --no-progress --out scores.tsv\n```\n"
    done, report, _ = _run_page(page, tmp_path / "run")
    assert done.returncode != 0 and report == [] and "block 1 (bash) exited" in done.stderr


def test_the_runner_shares_one_python_namespace_and_folder(tmp_path):
    (tmp_path / "run").mkdir()
    page = (
        "```python\nx = 6 * 7\nopen('x.txt', 'w').write(str(x))\n```\n```bash\ncat x.txt\n```\n```python\nprint(x)\n```"
    )
    done, report, _ = _run_page(page, tmp_path / "run")
    assert done.returncode == 0 and done.stdout == "4242\n" and [p for _, p, _ in report] == [False, True, True]


@pytest.mark.parametrize("page", PAGES)
def test_examples_are_self_contained(page):
    """No shared data, no test files, no sequence cut with ``...`` in a block that runs; a block not run says why."""
    blocks = _blocks((DOCS / page).read_text())
    assert blocks, f"{page} has no example"
    for _, code, why in blocks:
        if why is None:
            assert "../shared" not in code and "tests/" not in code and "..." not in code, code
        else:
            assert why.strip(), f"{page}: a block not run without a reason"


@pytest.mark.parametrize("page", PAGES)
def test_examples_run_as_written(page, tmp_path):
    """The page's runnable blocks in order, in one empty folder: each exits 0 and prints something."""
    (tmp_path / "run").mkdir()
    done, report, codes = _run_page((DOCS / page).read_text(), tmp_path / "run")
    times = ", ".join(f"block {i + 1}: {s} s ({c} s CPU)" for i, (s, _, c) in enumerate(report))
    assert done.returncode == 0, f"{page} failed after {times}:\n{codes[len(report)]}\n{done.stderr[-3000:]}"
    silent = [i + 1 for i, (_, printed, _) in enumerate(report) if not printed]
    assert silent == [], f"{page}: blocks {silent} print nothing ({times})"
    print(f"{page}: {times}")


def _marked() -> list[tuple[str, int, str]]:
    return [
        (page, i + 1, why)
        for page in PAGES
        for i, (_, _, why) in enumerate(_blocks((DOCS / page).read_text()))
        if why is not None
    ]


@pytest.mark.parametrize(("page", "block", "why"), _marked())
def test_example_not_run(page, block, why):
    """Listed, so the report names each block not run and why."""
    pytest.skip(f"{page}, block {block}: {why}")
