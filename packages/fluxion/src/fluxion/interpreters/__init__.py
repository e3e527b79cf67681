"""``fluxion.interpreters`` (JAX's ``jax.interpreters``): JAX's interpreter internals, which
Fluxion does not have; the submodules exist so that libraries importing them load, and raise a
clear ``AttributeError`` for any name used (see docs/guide/coming-from-jax.md).

Example:
    >>> import fluxion.interpreters as interpreters
    >>> sorted(interpreters.__all__)
    ['ad', 'batching', 'mlir', 'partial_eval', 'xla']
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ad", "batching", "mlir", "partial_eval", "xla"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"fluxion.interpreters.{name}")
    raise AttributeError(f"jax.interpreters.{name} is not provided by Fluxion "
                         f"(see docs/guide/coming-from-jax.md)")
