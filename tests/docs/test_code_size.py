"""The project's size rule (issue 19, part 6): no file over 400 lines in src/ and experiments/, no function or method
over 80 lines (``end_lineno - lineno + 1``, decorators not counted, nested functions counted on their own
and inside their parent)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "mlmprob"
EXPERIMENTS = ROOT / "experiments"  # moved out of the package (issue 36); the same rule holds there
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80


def size_offenders(
    source: str, name: str = "<string>", max_file: int = MAX_FILE_LINES, max_function: int = MAX_FUNCTION_LINES
) -> list[str]:
    """One line per file over ``max_file`` lines and per function/method over ``max_function`` lines."""
    out = []
    n_lines = len(source.splitlines())
    if n_lines > max_file:
        out.append(f"{name}: {n_lines} lines (max {max_file})")
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > max_function:
                out.append(f"{name}:{node.lineno}: function {node.name} is {length} lines (max {max_function})")
    return out


def test_src_obeys_the_size_rule():
    files = sorted([*SRC.rglob("*.py"), *EXPERIMENTS.rglob("*.py")])
    assert len(files) > 20 and any(p.is_relative_to(EXPERIMENTS) for p in files)  # the walk found both
    offenders = [o for p in files for o in size_offenders(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not offenders, "size rule broken:\n" + "\n".join(offenders)


def _function(name: str, body_lines: int, indent: str = "") -> str:
    return f"{indent}def {name}():\n" + "".join(f"{indent}    x = {i}\n" for i in range(body_lines))


def test_checker_flags_long_functions_methods_and_files():
    ok = _function("short", MAX_FUNCTION_LINES - 1)  # exactly 80 lines: allowed
    assert size_offenders(ok) == []
    long = _function("too_long", MAX_FUNCTION_LINES)  # 81 lines
    assert size_offenders(long, "m.py") == ["m.py:1: function too_long is 81 lines (max 80)"]
    method = "class C:\n" + _function("meth", MAX_FUNCTION_LINES, indent="    ")
    assert size_offenders(method, "c.py") == ["c.py:2: function meth is 81 lines (max 80)"]
    nested = "def outer():\n" + _function("inner", MAX_FUNCTION_LINES, indent="    ") + "    return inner\n"
    assert [o.split(": function ")[1].split(" ")[0] for o in size_offenders(nested)] == ["outer", "inner"]
    asyn = "async " + _function("co", MAX_FUNCTION_LINES)
    assert len(size_offenders(asyn)) == 1
    big = "\n".join(f"x{i} = {i}" for i in range(MAX_FILE_LINES + 1)) + "\n"
    assert size_offenders(big, "big.py") == ["big.py: 401 lines (max 400)"]
    assert size_offenders(big[: big.rindex("x400")], "edge.py") == []  # exactly 400 lines: allowed
