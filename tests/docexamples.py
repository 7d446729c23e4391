"""Runs doctest examples kept in tests/ rather than in the package's docstrings (internal modules' worked examples,
moved out of ``src/mlmprob`` to keep the package small), in the namespace of the module they document, with the
option flags pytest's ``--doctest-modules`` uses (ELLIPSIS)."""

from __future__ import annotations

import doctest
import importlib


def check_examples(module: str, examples: str, name: str = "examples") -> None:
    """Run ``examples`` (doctest text) with ``module``'s globals, as its own docstring's examples would run; any
    failing example fails the test with doctest's report."""
    mod = importlib.import_module(module)
    test = doctest.DocTestParser().get_doctest(examples, dict(vars(mod)), f"{module}.{name}", mod.__file__, 0)
    assert test.examples, "no examples to run"
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test, out=report.append, clear_globs=True)
    assert runner.failures == 0, "".join(report)
