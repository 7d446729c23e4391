"""docs/results/uncertainty.py: it runs in seconds, prints the intervals the notes quote, its committed
output (docs/results/uncertainty.txt) is current, and every interval key the notes cite exists."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
SCRIPT = RESULTS / "uncertainty.py"
COMMITTED = RESULTS / "uncertainty.txt"
KEY = re.compile(r"^\[([^\]]+)\] ")
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
CITED = re.compile(r"`((?:ab1|ab6|sv|inf|piv|gt|jt|bench|en|score|bf16)\.[^`\s]+)`")


@pytest.fixture(scope="module")
def printed() -> str:
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} is absent")
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    missing = re.findall(r"skipped: records file (\S+) is absent", proc.stdout)
    if missing:
        pytest.skip(f"records file {missing[0]} is absent (uncertainty.py needs it)")
    return proc.stdout


def _lines(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        m = KEY.match(line)
        if m:
            assert m.group(1) not in out, f"duplicate key {m.group(1)}"
            out[m.group(1)] = line
    return out


def test_prints_the_quoted_intervals(printed):
    lines = _lines(printed)
    assert sum("95% CI [" in line for line in lines.values()) >= 150
    # the cases issue 14 §6 names, with the verdicts the notes now state
    assert lines["ab1.bleu.raw-vs-local"].endswith("within noise")
    assert "+1.66, 95% CI [-0.63, +7.00]" in lines["ab1.bleu.raw-vs-local"]
    assert lines["ab1.native-vs.t5/warm-start"].endswith("excludes 0")
    assert lines["ab1.design-above-native.t1/gibbs-pt2.0"].endswith("excludes 0")
    assert lines["ab1.stutter.range"].endswith("0.066-0.160")
    assert lines["sv.accept.range.t4"].endswith("0.798-0.831")
    assert all(lines[k].endswith("within noise") for k in lines if k.startswith("sv.anneal.local."))
    assert lines["inf.sv300.cdrh3.cell-range"].endswith("1.00-23.33 %")
    assert lines["inf.sv300.cdrh3.standard.best-vs-l2r"].endswith("within noise")
    assert lines["piv.antiberty-cdrh3-k3.best-aa-vs-mask"].endswith("within noise")
    assert "1.86x" in lines["gt.floor.J3"] and "1.23x" in lines["gt.floor.J2"]
    assert "12.9x in sequences per wall second" in lines["bench.naive-gap"]


def test_committed_output_is_current(printed):
    """uncertainty.txt equals a fresh run (numbers to within one unit of their last printed digit)."""
    if not COMMITTED.exists():
        pytest.skip(f"{COMMITTED} is absent")
    new, old = _lines(printed), _lines(COMMITTED.read_text())
    assert sorted(new) == sorted(old), (
        "keys differ: rerun python docs/results/uncertainty.py > docs/results/uncertainty.txt"
    )
    for key, line in new.items():
        a, b = NUMBER.findall(line), NUMBER.findall(old[key])
        assert NUMBER.sub("#", line) == NUMBER.sub("#", old[key]) and len(a) == len(b), key
        for x, y in zip(a, b):
            digits = len(x.split(".")[1]) if "." in x and "e" not in x.lower() else 0
            tol = 1.01 * 10.0**-digits if "e" not in x.lower() else 0.02 * abs(float(x))
            assert abs(float(x) - float(y)) <= tol, f"{key}: {x} vs {y}"


def test_every_cited_key_exists(printed):
    keys = list(_lines(printed))
    cited = {(path.relative_to(RESULTS), k) for path in RESULTS.rglob("*.md") for k in CITED.findall(path.read_text())}
    assert cited, "no interval keys cited in docs/results"
    for path, k in sorted(cited):
        pattern = re.sub(r"<[^>]+>", "*", k).replace("...", "*")
        assert fnmatch.filter(keys, pattern), f"{path} cites `{k}`, which uncertainty.py does not print"
