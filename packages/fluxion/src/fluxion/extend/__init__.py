"""``fluxion.extend`` (JAX's ``jax.extend``): the interfaces for libraries that build on the
transformation system — its IR and tracing (``extend.core``), the backends (``extend.backend``),
source information (``extend.source_info_util``), ``linear_util`` and jaxlib's IFRT program
builders (``extend.ifrt_programs``). Submodules load on first access.

What Fluxion provides of each is listed in the module's ``__all__``; JAX names it lacks raise an
``AttributeError`` pointing to docs/guide/coming-from-jax.md, where they are listed with reasons.

Example:
    >>> import fluxion, fluxion.extend
    >>> fluxion.extend.core.Primitive("my_op").name
    'my_op'
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["backend", "core", "ifrt_programs", "linear_util", "random", "source_info_util"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"fluxion.extend.{name}")
    raise AttributeError(f"module 'fluxion.extend' has no attribute {name!r}: jax.extend.{name} "
                         f"is not provided by Fluxion (see docs/guide/coming-from-jax.md)")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
