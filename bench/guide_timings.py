"""Seconds each example of the README, the guides and getting-started takes, run as written (issue 52: each under 30 s
on the 2-core machine): every runnable block of every page (the README's install commands are marked not run), in order, in an empty folder, with the examples test's own runner
(``tests/docs/test_guide_examples.py``), wall and CPU seconds (this process's and its children's, which a busy
machine does not inflate as it does the wall time), and the load average at the start and end.

    python bench/guide_timings.py --out docs/results/guide_timings.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "docs"))

from test_guide_examples import DOCS, PAGES, _blocks, _run_page  # noqa: E402

BAR = 30.0


def page_text(page: str) -> str:
    return (DOCS / page).read_text()


def first_line(code: str) -> str:
    line = next((x for x in code.splitlines() if x.strip() and not x.startswith("#")), "")
    return ((line[:70] + "...") if len(line) > 70 else line).replace("|", "\\|")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="*", default=PAGES, help="pages under docs/ (default: the examples test's)")
    ap.add_argument("--out", type=Path, default=None, help="also write the table here (Markdown)")
    a = ap.parse_args(argv)
    load0, t_all = os.getloadavg()[0], time.perf_counter()
    rows, failed = [], []
    for page in a.pages:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "run").mkdir()
            done, report, codes = _run_page(page_text(page), Path(tmp) / "run")
        if done.returncode:
            failed.append(page)
        for i, ((wall, _, cpu), code) in enumerate(zip(report, codes)):
            rows.append((page, i + 1, wall, cpu, first_line(code)))
        print(f"{page}: " + ", ".join(f"{w} s ({c} CPU)" for w, _, c in report), flush=True)
    n_skipped = sum(why is not None for page in a.pages for _, _, why in _blocks(page_text(page)))
    over, over_cpu = [r for r in rows if r[2] > BAR], [r for r in rows if r[3] > BAR]
    lines = [
        f"Command: `python bench/guide_timings.py {shlex.join(argv if argv is not None else sys.argv[1:])}`; "
        f"{len(rows)} blocks run ({n_skipped} marked not run), {time.perf_counter() - t_all:.0f} s in all; load "
        f"average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (2 cores: above 2, the wall "
        "seconds include waiting for a core).",
        "",
        f"Over {BAR:.0f} s: {len(over)} of {len(rows)} blocks by wall time, {len(over_cpu)} by CPU time (two threads "
        "count twice)" + (f"; pages that failed: {failed}" if failed else ""),
        "",
        "| page | block | wall (s) | CPU (s) | first line |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {p} | {b} | {w} | {c} | `{f}` |" for p, b, w, c, f in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text("# Seconds per guide example\n\n" + text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
