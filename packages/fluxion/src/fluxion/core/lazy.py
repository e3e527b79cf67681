"""Lazily loaded families of a package namespace (PEP 562 module ``__getattr__`` / ``__dir__``).

``fluxion.lax``, ``fluxion.numpy`` and ``fluxion.random`` import the modules a plain
``import fluxion, fluxion.numpy`` needs and name the rest in a table of *families*: a family is
a submodule, imported the first time one of its names (or the submodule itself) is looked up.
The value is then stored in the package's namespace, so later lookups are plain attribute reads.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterable, Mapping

__all__ = ["lazy_namespace"]


def lazy_namespace(package: str, namespace: dict[str, Any],
                   families: Mapping[str, Iterable[str]], *,
                   submodules: Iterable[str] = (),
                   aliases: Mapping[str, tuple[str, str]] | None = None,
                   ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose ``families`` load on first use.

    ``families`` maps a submodule of ``package`` to the public names it defines; ``submodules``
    are further submodule names reachable as attributes; ``aliases`` maps a public name to
    ``(submodule, name there)`` where the two differ.

    Example:
        >>> ns = {}
        >>> getattr_, dir_ = lazy_namespace("fluxion.lax", ns, {"windowed": ("reduce_window",)})
        >>> getattr_("reduce_window").__name__, "reduce_window" in ns
        ('reduce_window', True)
    """
    where = {name: (sub, name) for sub, names in families.items() for name in names}
    where.update(aliases or {})
    modules = frozenset(families) | frozenset(submodules)

    def __getattr__(name: str) -> Any:
        found = where.get(name)
        if found is not None:
            value = getattr(importlib.import_module(f"{package}.{found[0]}"), found[1])
        elif name in modules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r} (the JAX names "
                                 f"Fluxion lacks are listed in docs/guide/coming-from-jax.md)")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where) | modules)

    return __getattr__, __dir__
