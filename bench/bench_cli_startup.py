"""How fast the command line answers without work to do (issue 37 §3): ``mlmprob --help``, ``--version``, a
command's ``--help`` and a usage error, each against ``python -c pass`` (the interpreter's own start) and
``python -c "import torch"`` in the same run, median wall seconds of ``--repeats`` runs, run in turn.

    python bench/bench_cli_startup.py --repeats 7 --out docs/results/cli_startup.md
"""

from __future__ import annotations

import argparse
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = [
    ("python -c pass", [sys.executable, "-c", "pass"]),
    ('python -c "import torch"', [sys.executable, "-c", "import torch"]),
    ("mlmprob --help", [sys.executable, "-m", "mlmprob", "--help"]),
    ("mlmprob --version", [sys.executable, "-m", "mlmprob", "--version"]),
    ("mlmprob score --help", [sys.executable, "-m", "mlmprob", "score", "--help"]),
    ("mlmprob sample --help", [sys.executable, "-m", "mlmprob", "sample", "--help"]),
    ("mlmprob score x.fasta --no-such-option", [sys.executable, "-m", "mlmprob", "score", "x.fasta", "--bogus"]),
]


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=None, help="also write the table here (Markdown)")
    a = ap.parse_args(argv)
    times = {name: [] for name, _ in CASES}
    for _ in range(a.repeats):  # interleaved: a busy moment of the machine hits every case alike
        for name, cmd in CASES:
            times[name].append(wall(cmd))
    base = statistics.median(times["python -c pass"])
    lines = [
        f"Command: `python bench/bench_cli_startup.py {shlex.join(argv or sys.argv[1:])}` on "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"median of {a.repeats} runs each, interleaved.",
        "",
        "| command | median wall (s) | minus `python -c pass` (s) |",
        "|---|---|---|",
    ]
    for name, _ in CASES:
        med = statistics.median(times[name])
        lines.append(f"| `{name}` | {med:.3f} | {med - base:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text("# The command line's start-up\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
