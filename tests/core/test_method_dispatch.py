"""Methods are dispatched by a table (a dict from method name to function, one per module), not by chains of
``if method == ...``: the source of ``src/mlmprob`` holds no ``method ==`` / ``method in (`` comparison outside the
samplers' registry, except the ones listed below, each a single test of one property rather than a dispatch."""

import re
from pathlib import Path

import mlmprob

SRC = Path(mlmprob.__file__).resolve().parent
COMPARISON = re.compile(r"\bmethod\s*==|(?<!for )\bmethod\s+in\s*\(")
ALLOWED = {  # path under src/mlmprob -> how many comparisons it keeps, and why
    "sampling/registry.py": None,  # the samplers' registry: where a method name is looked up (any number)
    "onepass/estimate.py": 1,  # one_pass reads a correction file, unmasked none: a setting, not a dispatch
    "app/render.py": 1,  # selects the runs of one method for a plot: a filter, not a dispatch
    "infilling/spec.py": 1,  # validation: a pivot is only for hcb
    "designing/spec.py": 1,  # replica's ladder of temperatures against one temperature
    "designing/api.py": 1,  # anneal's schedule (a file owned elsewhere; kept as it is)
    "designing/job.py": 1,  # replica's rungs per chain
}


def comparisons() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        lines = [line.strip() for line in path.read_text().splitlines() if COMPARISON.search(line.split("#")[0])]
        if lines:
            found[path.relative_to(SRC).as_posix()] = lines
    return found


def test_the_pattern_sees_a_chain_and_not_a_loop():
    assert COMPARISON.search('    if method == "mlm":') and COMPARISON.search("elif spec.method in ('a', 'b'):")
    assert not COMPARISON.search('for method in ("standard", "hcb"):') and not COMPARISON.search("methods == x")


def test_no_method_is_dispatched_by_an_if_chain():
    left = {
        path: lines
        for path, lines in comparisons().items()
        if path not in ALLOWED or (ALLOWED[path] is not None and len(lines) > ALLOWED[path])
    }
    assert left == {}, f"method comparisons outside a dispatch table (use a dict from method to function): {left}"


def test_every_allowed_comparison_is_still_there():
    """An exception that is gone is taken off the list, so the list stays the truth."""
    found = comparisons()
    gone = [p for p, n in ALLOWED.items() if n is not None and len(found.get(p, [])) != n]
    assert gone == [], f"update ALLOWED: {gone}"
