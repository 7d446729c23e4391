"""The package's import graph, read from the source (function-level imports and importlib included): no
circles, and no import from a lower layer to a higher one, by the layer table of docs/architecture.md."""

import ast
import re
from pathlib import Path

import mlmprob

SRC = Path(mlmprob.__file__).resolve().parent.parent
ROOT = SRC.parent  # the repository: the experiments live beside src/, outside the package


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for p in [*(SRC / "mlmprob").rglob("*.py"), *(ROOT / "experiments").rglob("*.py")]:
        parts = list(p.relative_to(SRC if p.is_relative_to(SRC) else ROOT).with_suffix("").parts)
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
            elif isinstance(node, ast.Call) and (dyn := _import_module_target(node, mod, is_pkg)):
                # a name built at run time may be any module of the package it starts with
                names = [dyn] + ([m for m in mods if m.startswith(dyn + ".")] if _is_dynamic(node) else [])
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    pkg = pkg[: len(pkg) - node.level + 1]
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


def _import_module_target(node: ast.Call, mod: str, is_pkg: bool) -> str | None:
    """The module an ``importlib.import_module(NAME[, package])`` call names: a constant, or the literal
    prefix of an f-string (``f".commands.{name}"`` names the package ``commands``); relative names are
    resolved against this module's package."""
    f = node.func
    if (
        not (
            (isinstance(f, ast.Attribute) and f.attr == "import_module")
            or (isinstance(f, ast.Name) and f.id == "import_module")
        )
        or not node.args
    ):
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        name = arg.value
    elif isinstance(arg, ast.JoinedStr):
        name = ""
        for part in arg.values:
            if isinstance(part, ast.Constant):
                name += part.value
            elif (
                isinstance(part, ast.FormattedValue)
                and isinstance(part.value, ast.Name)
                and part.value.id == "__package__"
                and not name
            ):
                name = ".".join(mod.split(".") if is_pkg else mod.split(".")[:-1])
            else:
                break
        name = name.rstrip(".")
    else:
        return None
    if name.startswith("."):
        pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
        name = ".".join(pkg) + name
    return name or None


def _is_dynamic(node: ast.Call) -> bool:
    return isinstance(node.args[0], ast.JoinedStr)


def _is_dynamic(node: ast.Call) -> bool:
    return isinstance(node.args[0], ast.JoinedStr)


def layer_table() -> list[tuple[int, str, list[str]]]:
    """``(layer, name, module prefixes)`` rows of the table in docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = []
    for line in text.splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|([^|]*)\|", line)
        if m:
            rows.append((int(m.group(1)), m.group(2), re.findall(r"`([\w.]+)`", m.group(3))))
    return rows


def layer_of(module: str, table) -> int | None:
    best, layer = -1, None
    for n, _, prefixes in table:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, layer = len(p), n
    return layer


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return stack[stack.index(w) :] + [w]
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
    assert "experiments.cdr_h3_common" in g["experiments.cdr_h3_report"]  # top-level, relative
    assert "mlmprob.models" in g["experiments.cdr_h3"]  # inside a function
    assert {"mlmprob.commands", "mlmprob.commands.score"} <= g["mlmprob.cli"]  # importlib, f-string
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circles():
    assert _cycle(import_graph()) is None


def test_only_experiments_import_experiments():
    up = [
        (m, t)
        for m, ts in import_graph().items()
        for t in ts
        if t.startswith("experiments") and not m.startswith("experiments")
    ]
    assert up == []


def test_every_module_has_a_layer_and_no_import_runs_up_the_layers():
    table = layer_table()
    assert [n for n, _, _ in table] == list(range(len(table))) and len(table) >= 6
    g = import_graph()
    unplaced = [m for m in g if layer_of(m, table) is None]
    assert unplaced == [], f"modules in no layer of docs/architecture.md: {unplaced}"
    up = sorted((m, t) for m, ts in g.items() for t in ts if layer_of(t, table) > layer_of(m, table))
    assert up == [], f"imports from a lower layer to a higher one: {up}"


def test_the_layer_check_can_fail():
    table = [(0, "base", ["a"]), (1, "top", ["a.top", "b"])]
    assert layer_of("a.x", table) == 0 and layer_of("a.top.y", table) == 1 and layer_of("c", table) is None


def test_the_base_modules_import_nothing_above_them():
    """The alphabet imports nothing of mlmprob; the metrics only the errors, each other and the lazy namespace of
    their package (``mlmprob.lazy``, which imports nothing of mlmprob)."""
    g = import_graph()
    assert g["mlmprob.alphabet"] == set()
    metrics = [m for m in g if m == "mlmprob.metrics" or m.startswith("mlmprob.metrics.")]
    assert len(metrics) >= 4
    for mod in metrics:
        assert {t for t in g[mod] if not t.startswith("mlmprob.metrics")} <= {"mlmprob.errors", "mlmprob.lazy"}, mod
    assert g["mlmprob.lazy"] == set()


def test_the_amino_acid_alphabet_is_written_once():
    """``mlmprob.alphabet.AMINO_ACIDS`` is the one definition: no module spells the 20 letters out again."""
    from mlmprob.alphabet import AMINO_ACIDS

    spelled = [
        str(p.relative_to(ROOT))
        for p in [*(SRC / "mlmprob").rglob("*.py"), *(ROOT / "experiments").rglob("*.py")]
        if p.name != "alphabet.py" and any(f"{q}{AMINO_ACIDS}{q}" in p.read_text() for q in "\"'")
    ]
    assert spelled == []


ALGORITHMS = (
    "sampling",
    "infilling",
    "joints",
    "variants",
    "designing",
    "onepass",
    "likelihood",
    "training",
    "synthetic",
    "metrics",
)


def _algorithm_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "mlmprob" and parts[1] in ALGORITHMS else None


def _is_streaming_job(module: str) -> bool:
    return module.rpartition(".")[2] in ("stream", "job")


def test_no_algorithm_imports_another_algorithms_streaming_job():
    """A streamed job (``*.stream``, ``*.job``) sits on top of its own algorithm: another algorithm that needs a
    piece of it takes it from the layer below (e.g. the gap parser, ``mlmprob.gaps``), never from the job."""
    assert _algorithm_of("mlmprob.sampling.cdr") == "sampling" and _algorithm_of("mlmprob.scoring") is None
    assert _is_streaming_job("mlmprob.infilling.stream") and not _is_streaming_job("mlmprob.runtime.jobs")
    across = sorted(
        (m, t)
        for m, ts in import_graph().items()
        for t in ts
        if _algorithm_of(m) and _algorithm_of(t) not in (None, _algorithm_of(m)) and _is_streaming_job(t)
    )
    assert across == [], f"an algorithm imports another algorithm's streaming job: {across}"
