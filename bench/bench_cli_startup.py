"""How fast the command line answers without work to do (issue 37 §3): ``mlmprob --help``, ``--version``, a
command's ``--help`` and a usage error, each against ``python -c pass`` (the interpreter's own start) and
``python -c "import torch"`` in the same run, median wall seconds of ``--repeats`` runs, run in turn. And the first
real work (issue 52): loading the default model, and scoring one short sequence with the CLI, with the embedded model
built natively (the default) and as transformers' class (``MLMPROB_FUSED=0``), side by side.

    python bench/bench_cli_startup.py --repeats 7 --out docs/results/cli_startup.md
"""

from __future__ import annotations

import argparse
import os
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
LOAD = [sys.executable, "-c", "import mlmprob; mlmprob.load_mlm('antiberty')"]
SCORE = [sys.executable, "-m", "mlmprob", "score", "-", "--format", "text", "--no-progress", "--out", "-"]
WORK = [  # (name, command, environment, standard input)
    ("load_mlm('antiberty') (native, the default)", LOAD, {}),
    ("load_mlm('antiberty') with MLMPROB_FUSED=0 (transformers)", LOAD, {"MLMPROB_FUSED": "0"}),
    ("mlmprob score (one 25-residue sequence)", SCORE, {}),
    ("mlmprob score, MLMPROB_FUSED=0 (transformers)", SCORE, {"MLMPROB_FUSED": "0"}),
]
SEQ = "EVQLVESGGGLVQPGGSLRLSCAAS\n"


def wall(cmd: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    done = subprocess.run(
        cmd, input=SEQ if env is not None else None, capture_output=True, text=True, env=env, check=False
    )
    if env is not None and done.returncode:
        sys.exit(f"{shlex.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=None, help="also write the table here (Markdown)")
    a = ap.parse_args(argv)
    times: dict[str, list[float]] = {name: [] for name, _ in CASES} | {name: [] for name, _, _ in WORK}
    for _ in range(a.repeats):  # interleaved: a busy moment of the machine hits every case alike
        for name, cmd in CASES:
            times[name].append(wall(cmd))
        for name, cmd, extra in WORK:
            times[name].append(wall(cmd, {**os.environ, **extra}))
    base = statistics.median(times["python -c pass"])
    lines = [
        f"Command: `python bench/bench_cli_startup.py {shlex.join(argv or sys.argv[1:])}` on "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"median of {a.repeats} runs each, interleaved.",
        "",
        "| command | median wall (s) | minus `python -c pass` (s) |",
        "|---|---|---|",
    ]
    for name in times:
        med = statistics.median(times[name])
        lines.append(f"| `{name}` | {med:.3f} | {med - base:.3f} |")
    native, hf = (statistics.median(times[WORK[i][0]]) for i in (0, 1))
    lines += ["", f"Loading the default model natively takes {native / hf:.2f}x the time of transformers' class."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text("# The command line's start-up\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
