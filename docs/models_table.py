"""Regenerate the architecture table of docs/models.md from a run of tests/models/test_conformance.py.

    PYTHONPATH=src python docs/models_table.py      # ~1-2 minutes on 2 cores; rewrites the table in place

Each architecture of the installed transformers' masked-LM mapping gets its status (verified: every
conformance test agrees with the brute-force reference; known issue: an xfail, with its reason; not built,
and why; differs: an unexpected failure) and the path its forward takes (mlmprob's fused forward, or
transformers' own code).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "models.md"
BEGIN, END = "<!-- table: begin (docs/models_table.py) -->", "<!-- table: end -->"
FUSED = {"bert": "fused (BERT)", "roberta": "fused (BERT)", "esm": "fused (ESM-2, rotary)"}
CHECKS = {
    "test_pll_and_token_scores": "pll/token_scores",
    "test_loglik_l2r": "loglik l2r",
    "test_sampler_conditionals": "conditionals (padded)",
    "test_maximum_length": "maximum length",
}


def outcomes(xml: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """``model_type -> check -> (outcome, message)`` from a junit XML file."""
    out: dict = defaultdict(dict)
    probes: dict = {}
    for case in ET.parse(xml).iter("testcase"):
        name = case.get("name", "")
        if "[" not in name:
            continue
        test, model_type = name[:-1].split("[", 1)
        kind, msg = "passed", ""
        for prop in case.iter("property"):
            if prop.get("name") == "probe" and prop.get("value"):
                probes[model_type] = "probe: " + prop.get("value")
        if test == "test_probe_findings":
            continue
        for child in case:
            if child.tag == "skipped":
                xf = (child.get("type") or "") == "pytest.xfail"
                kind, msg = ("xfail" if xf else "skipped"), child.get("message", "")
            elif child.tag in ("failure", "error"):
                kind, msg = "failed", (child.get("message") or "").splitlines()[0][:120]
        out[model_type][CHECKS.get(test, test)] = (kind, msg.removeprefix("Skipped: "))
    return out, probes


def row(model_type: str, checks: dict[str, tuple[str, str]], probe: str = "") -> str:
    kinds = {k for k, _ in checks.values()}
    path = "transformers" if "LM head" in probe else FUSED.get(model_type, "transformers")
    if kinds == {"passed"}:
        if probe:
            return f"| {model_type} | fixed by the probe | {path} | {probe} |"
        return f"| {model_type} | verified | {path} | |"
    if "skipped" in kinds and "passed" not in kinds:
        reason = next(m for k, m in checks.values() if k == "skipped")
        return f"| {model_type} | not built here | - | {reason} |"
    bad = [f"{c}: {m}" for c, (k, m) in checks.items() if k in ("xfail", "failed")]
    status = "differs (unexpected)" if "failed" in kinds else "known issue"
    return f"| {model_type} | {status} | {path} | {'; '.join(bad + ([probe] if probe else []))} |"


def table(results, probes) -> str:
    lines = ["| architecture | status | forward | notes |", "|---|---|---|---|"]
    lines += [row(t, results[t], probes.get(t, "")) for t in sorted(results)]
    return "\n".join(lines)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "conformance.xml"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--junitxml={xml}",
                "-o",
                "junit_family=legacy",  # keeps record_property (the probe's notes)
                str(ROOT / "tests" / "models" / "test_conformance.py"),
            ],
            cwd=ROOT,
            check=False,
        )
        results, probes = outcomes(xml)
    import transformers

    sys.path.insert(0, str(ROOT / "tests" / "models"))
    from conformance_models import VARIANTS

    n = len([t for t in results if t not in VARIANTS])
    variants = [t for t in sorted(results) if t in VARIANTS]
    also = f" and the layout {', '.join(variants)}" if variants else ""
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    body = f"\n(transformers {transformers.__version__}, {n} architectures{also})\n\n{table(results, probes)}\n"
    DOC.write_text(head + BEGIN + body + END + tail)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
