"""Package namespaces that import their public names on first use (PEP 562), so that importing a package
(``mlmprob``, ``mlmprob.sampling``, ...) to read one of its light modules (a spec, a table of choices) does not
import torch or transformers. The command line's ``--help``, ``--version`` and usage errors rely on it.

>>> import types
>>> pkg = types.ModuleType("demo_pkg")
>>> pkg.__getattr__, pkg.__dir__ = exports("json", {"dumps": "json"})
>>> pkg.__getattr__("dumps")({"a": 1})
'{"a": 1}'
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable


def exports(package: str, homes: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: a name of ``homes`` (name -> module, relative to
    ``package`` when it starts with a dot) is imported from its module when first read and kept; any other
    name is tried as a submodule."""

    def __getattr__(name: str):
        if name in homes:
            value = getattr(importlib.import_module(homes[name], package), name)
            setattr(sys.modules[package], name, value)
            return value
        if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(homes))

    return __getattr__, __dir__
