"""Package namespaces that import their public names on first use (PEP 562), so that reading a light module (``--help``,
``--version``, usage errors) imports no torch. A package's one call: ``__getattr__, __dir__, __all__ =
exports(__name__, {name: module, ...})``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable


def exports(package: str, homes: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``: ``__all__`` is the names of ``homes`` (name ->
    module, relative to ``package`` when it starts with a dot), each imported from its module when first read and
    kept; a name whose home is the submodule of that name (``"training": ".training"``) is the submodule itself.
    Any other name is tried as a submodule."""

    def __getattr__(name: str):
        if name in homes:
            module = importlib.import_module(homes[name], package)
            value = module if module.__name__ == f"{package}.{name}" else getattr(module, name)
            setattr(sys.modules[package], name, value)
            return value
        if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(homes))

    return __getattr__, __dir__, list(homes)
