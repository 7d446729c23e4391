"""The package's import graph, read from the source (function-level imports included): no circles, and
nothing below ``mlmprob.experiments`` imports it."""

import ast
from pathlib import Path

import mlmprob

SRC = Path(mlmprob.__file__).resolve().parent.parent


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for p in (SRC / "mlmprob").rglob("*.py"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports. An import of a package's own ancestors (``from . import
    x`` in ``a.b.c`` names ``a.b``) counts only for the submodule it names."""
    mods = _modules()

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for mod, (path, is_pkg) in mods.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    pkg = pkg[:len(pkg) - node.level + 1]
                    base = ".".join(pkg + ([node.module] if node.module else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                target = known(name)
                if target and target != mod and not mod.startswith(target + "."):
                    edges.add(target)
        graph[mod] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state and (found := visit(w)):
                return found
        state[v] = 2
        stack.pop()
        return None

    for v in sorted(graph):
        if v not in state and (found := visit(v)):
            return found
    return None


def test_the_scan_sees_lazy_and_relative_imports():
    g = import_graph()
    assert "mlmprob.experiments.cdr_h3_common" in g["mlmprob.experiments.cdr_h3_report"]      # top-level, relative
    assert "mlmprob.models" in g["mlmprob.experiments.cdr_h3"]                                  # inside a function
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circles():
    assert _cycle(import_graph()) is None


def test_only_experiments_import_experiments():
    up = [(m, t) for m, ts in import_graph().items() for t in ts
          if t.startswith("mlmprob.experiments") and not m.startswith("mlmprob.experiments")]
    assert up == []


def test_the_base_modules_import_nothing_above_them():
    """The alphabet imports nothing of mlmprob; the metrics only the errors and each other."""
    g = import_graph()
    assert g["mlmprob.alphabet"] == set()
    metrics = [m for m in g if m == "mlmprob.metrics" or m.startswith("mlmprob.metrics.")]
    assert len(metrics) >= 4
    for mod in metrics:
        assert {t for t in g[mod] if not t.startswith("mlmprob.metrics")} <= {"mlmprob.errors"}, mod


def test_the_amino_acid_alphabet_is_written_once():
    """``mlmprob.alphabet.AMINO_ACIDS`` is the one definition: no module spells the 20 letters out again."""
    from mlmprob.alphabet import AMINO_ACIDS

    spelled = [str(p.relative_to(SRC)) for p in (SRC / "mlmprob").rglob("*.py")
               if p.name != "alphabet.py" and any(f"{q}{AMINO_ACIDS}{q}" in p.read_text() for q in "\"'")]
    assert spelled == []
