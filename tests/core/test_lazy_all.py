"""Each package's public names are written once, in its ``mlmprob.lazy.exports`` call: its ``__all__`` is that
dict's names (issue 51, item 5), ``from PACKAGE import *`` gives exactly them and each resolves."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import mlmprob

SRC = Path(mlmprob.__file__).resolve().parent


def _package(init: Path) -> str:
    return ".".join(("mlmprob", *init.parent.relative_to(SRC).parts))


def _homes(tree: ast.Module) -> dict[str, str] | None:
    """The dict literal of the module's ``exports(__name__, {...})`` call, or None without one."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("exports", "_exports"):
            d = node.args[1]
            assert isinstance(d, ast.Dict), "the names are a dict literal in the call"
            return {ast.literal_eval(k): ast.literal_eval(v) for k, v in zip(d.keys, d.values, strict=True)}
    return None


INITS = {_package(p): p for p in sorted(SRC.rglob("__init__.py"))}
LAZY = sorted(name for name, p in INITS.items() if _homes(ast.parse(p.read_text("utf-8"))) is not None)


def test_every_package_with_public_names_exports_them_lazily():
    assert set(INITS) - set(LAZY) == {"mlmprob.commands"}  # the CLI's subcommands: no public names
    assert not hasattr(importlib.import_module("mlmprob.commands"), "__all__")


@pytest.mark.parametrize("package", LAZY)
def test_all_is_the_lazy_dict_and_each_name_is_written_once(package):
    tree = ast.parse(INITS[package].read_text("utf-8"))
    homes = _homes(tree)
    assert homes is not None
    module = importlib.import_module(package)
    assert module.__all__ == list(homes)
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body
    strings = [n.value for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Constant)]
    assert [n for n in homes if strings.count(n) != 1] == []
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "__all__"]
    assert len(uses) == 1 and isinstance(uses[0].ctx, ast.Store)  # set once: by the exports call


@pytest.mark.parametrize("package", LAZY)
def test_star_import_gives_exactly_the_public_names_and_each_resolves(package):
    module = importlib.import_module(package)
    namespace: dict = {}
    exec(f"from {package} import *", namespace)  # noqa: S102 - the statement under test
    namespace.pop("__builtins__")
    assert sorted(namespace) == sorted(module.__all__)
    homes = _homes(ast.parse(INITS[package].read_text("utf-8")))
    assert homes is not None
    for name, value in namespace.items():
        assert value is getattr(module, name)
        # a module only where the name's home is the submodule of that name (``mlmprob.training``)
        assert inspect.ismodule(value) == (homes[name] == f".{name}"), name
