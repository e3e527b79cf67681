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
from collections.abc import Callable
from typing import Any

__all__ = ["ad", "batching", "mlir", "partial_eval", "xla"]


def _not_provided(module: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a ``jax.interpreters`` shell: every name raises an
    AttributeError naming the JAX name and pointing to coming-from-jax.md.

    Example:
        >>> getter = _not_provided("jax.interpreters.ad")
        >>> try:
        ...     getter("JVPTrace")
        ... except AttributeError as e:
        ...     print(str(e).split(":")[0])
        jax.interpreters.ad.JVPTrace is not provided by Fluxion
    """
    def __getattr__(name: str) -> Any:
        raise AttributeError(f"{module}.{name} is not provided by Fluxion: its transformations "
                             f"have no counterpart of JAX's internal interpreters "
                             f"(see docs/guide/coming-from-jax.md)")
    return __getattr__


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"fluxion.interpreters.{name}")
    raise AttributeError(f"jax.interpreters.{name} is not provided by Fluxion "
                         f"(see docs/guide/coming-from-jax.md)")
