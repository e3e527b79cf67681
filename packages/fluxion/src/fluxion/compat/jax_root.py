"""The module ``jax`` under :func:`fluxion.compat.install_jax_alias`: Fluxion's root namespace,
plus the version of the JAX API it follows.

Every attribute is Fluxion's (``jax.jit is fluxion.jit``, ``jax.numpy is fluxion.numpy``); only
``__version__``/``__version_info__`` differ from ``fluxion``'s: they give the JAX release whose
API Fluxion follows (0.10.2), which is what libraries compare (``jax.__version_info__ >=
(0, 10, 0)``). A name Fluxion lacks raises an ``AttributeError`` naming ``jax.<name>`` and
pointing to docs/guide/coming-from-jax.md.

Example:
    >>> import fluxion, fluxion.compat.jax_root as jax_root
    >>> jax_root.__version_info__, jax_root.jit is fluxion.jit
    ((0, 10, 2), True)
"""

from __future__ import annotations

import importlib
from typing import Any

import fluxion as _fluxion

__version__ = "0.10.2"
__version_info__ = (0, 10, 2)
__path__: list[str] = []  # a package: ``import jax.numpy`` looks for submodules under it
__all__ = list(_fluxion.__all__)

# jax.<name> of the mutable references (fluxion.ref; also fluxion's own root names).
_REF_NAMES = ("Ref", "new_ref", "empty_ref", "free_ref", "freeze")

# jax.<name> submodules that are not attributes of the fluxion package until imported.
_SUBMODULES = frozenset({
    "extend", "ffi", "version", "core", "tree", "tree_util", "errors", "test_util",
    "interpreters", "api_util", "lib", "ref", "experimental", "sharding", "stages", "export",
})


def __getattr__(name: str) -> Any:
    if name in _REF_NAMES:
        return getattr(importlib.import_module("fluxion.ref"), name)
    try:
        value = getattr(_fluxion, name)
    except AttributeError:
        if name not in _SUBMODULES:
            raise AttributeError(
                f"module 'jax' has no attribute {name!r}: jax.{name} is not provided by Fluxion "
                f"(the JAX names Fluxion lacks are listed in docs/guide/coming-from-jax.md)"
            ) from None
        value = importlib.import_module(f"jax.{name}")
    if not name.startswith("__"):
        globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(_fluxion)) | set(_REF_NAMES) | {"api_util",
                  "interpreters", "version", "extend", "ref", "lib"})
