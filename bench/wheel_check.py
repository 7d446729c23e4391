"""The README's command lines against the wheel, as a new user gets it (issue 52, item 3): build the wheel of the
commit (``pip wheel --no-deps .`` in a ``git archive HEAD`` export: uncommitted edits are not in it), install it with the CPU build of torch (the Makefile's ``TORCH_SPEC`` from the index
``make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu`` names) into a fresh virtual environment in a temporary
folder, then run every ``mlmprob ...`` line of README.md's bash blocks there, in order, in an empty folder outside the
checkout, offline, and report each line's exit code and wall time as a Markdown table. Not part of the test suite
(it needs PyPI or a warm pip cache, and minutes).

A line that reads a file the README does not write (``seqs.fasta``) gets one written first, said in the report. A
line that names a Sapiens model runs after ``pip install --no-deps sapiens==1.0.5`` (the Makefile's, and what the
README must say next to it: checked).

    .venv/bin/python bench/wheel_check.py --out docs/results/wheel_check.md
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SAPIENS = "sapiens==1.0.5"
FASTA = ">a\nEVQLVESGGGLVQPGGSLRLSCAAS\n>b\nQVQLQESGPGLVKPSETLSLTC\n"  # for a line reading the user's seqs.fasta


def makefile_var(name: str) -> str:
    m = re.search(rf"^{name} \?= *(.*)$", (ROOT / "Makefile").read_text(), re.M)
    return m.group(1).strip() if m else ""


def readme_lines(readme: str) -> list[tuple[list[str], str]]:
    """``(assignments before it, command)`` for every ``mlmprob`` line of the README's bash blocks (continuations
    joined), in order."""
    out, env = [], []
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", readme, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            code = line.split(" #")[0].strip() if not line.lstrip().startswith("#") else ""
            if re.match(r"^[A-Z_]+=\S+$", code):
                env.append(code)
            elif code.startswith("mlmprob "):
                out.append((list(env), code))
    return out


def sh(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def step(log: list[str], what: str, argv: list[str], **kw) -> float:
    t0 = time.perf_counter()
    p = sh(argv, **kw)
    dt = time.perf_counter() - t0
    log.append(f"- {what}: exit {p.returncode}, {dt:.0f} s")
    if p.returncode:
        sys.exit(f"{what} failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="also write the report (Markdown) to this file")
    ap.add_argument("--python", default="python3", help="the interpreter of the fresh environment")
    args = ap.parse_args(argv)
    torch_spec, index = makefile_var("TORCH_SPEC") or "torch", CPU_INDEX
    log: list[str] = []
    rows: list[str] = []
    notes: list[str] = []
    failed = 0
    with tempfile.TemporaryDirectory(prefix="mlmprob-wheel-check.") as tmp:
        work = Path(tmp)
        src = work / "src"
        src.mkdir()
        commit = sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
        tar = subprocess.Popen(["git", "-C", str(ROOT), "archive", "HEAD"], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(src)], stdin=tar.stdout, check=True)
        tar.wait()
        readme = (src / "README.md").read_text()
        for i, line in enumerate(readme.splitlines(), 1):  # a line naming a Sapiens model says how to add it
            if re.search(r"sapiens-v[hl]", line) and not line.startswith(("|", "-", "[")):
                said = f"pip install --no-deps {SAPIENS}" in line
                notes.append(
                    f"README line {i} names a Sapiens model and {'says' if said else 'does NOT say'} "
                    f"`pip install --no-deps {SAPIENS}`"
                )
        step(
            log,
            "build the wheel (`pip wheel --no-deps .`)",
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"), str(src)],
        )
        wheel = next((work / "dist").glob("mlmprob-*.whl"))
        py = work / "venv" / "bin" / "python"
        step(log, f"fresh venv (`{args.python} -m venv`)", [args.python, "-m", "venv", str(work / "venv")])
        step(
            log,
            f"`pip install {torch_spec} --index-url {index}`",
            [str(py), "-m", "pip", "install", "-q", torch_spec, "--index-url", index],
        )
        step(log, f"`pip install {wheel.name}`", [str(py), "-m", "pip", "install", "-q", str(wheel)])
        run = work / "run"
        run.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLMPROB_", "PYTHON", "VIRTUAL_ENV"))}
        env.update(PATH=f"{py.parent}{os.pathsep}{env.get('PATH', '')}", HF_HUB_OFFLINE="1")
        sapiens_added = False
        for assigns, cmd in readme_lines(readme):
            for name in re.findall(r"(?:^|\s)(\S+\.fasta)\b", cmd):
                if not (run / name).exists() and "--out" not in cmd.split(name)[0]:
                    (run / name).write_text(FASTA)
                    notes.append(
                        f"`{name}` is the user's file (the README does not write it): the check wrote a "
                        "FASTA of two sequences first"
                    )
            if "sapiens" in cmd and not sapiens_added:
                said = f"pip install --no-deps {SAPIENS}" in readme
                notes.append(
                    f"a line names a Sapiens model: `pip install --no-deps {SAPIENS}` first; the README "
                    f"{'says so' if said else 'does NOT say so'}"
                )
                step(
                    log,
                    f"`pip install --no-deps {SAPIENS}`",
                    [str(py), "-m", "pip", "install", "-q", "--no-deps", SAPIENS],
                )
                sapiens_added = True
            script = "\n".join([*assigns, cmd])
            t0 = time.perf_counter()
            p = sh(["bash", "-euo", "pipefail", "-c", script], cwd=run, env=env, timeout=1800)
            dt = time.perf_counter() - t0
            failed += p.returncode != 0
            said = [x for x in p.stderr.strip().splitlines() if "%|" not in x] or [""]  # no progress bars
            last = said[-1][:160].replace("|", "\\|")
            shown = cmd if len(cmd) < 150 else cmd[:147] + "..."
            rows.append(f"| `{shown}` | {p.returncode} | {dt:.1f} | {last} |")
    import platform

    cpu = f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
    text = "\n".join(
        [
            "# The README's command lines on the wheel",
            "",
            f"Made by `.venv/bin/python bench/wheel_check.py --out docs/results/wheel_check.md` on "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({platform.python_version()}, {cpu}; other jobs "
            f"shared the machine, so the times are upper bounds), commit {commit}. The wheel in a fresh virtual environment with the CPU "
            "build of torch, offline, each line in one empty folder outside the checkout, in the README's order.",
            "",
            "Set-up:",
            "",
            *log,
            "",
            *(["Notes:", "", *[f"- {n}" for n in notes], ""] if notes else []),
            "| README line | exit | seconds | last line on stderr |",
            "|---|---|---|---|",
            *rows,
            "",
            f"{len(rows) - failed} of {len(rows)} lines exited 0.",
            "",
        ]
    )
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
