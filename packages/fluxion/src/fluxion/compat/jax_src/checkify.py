"""``jax._src.checkify`` (flax.nnx uses it): Fluxion's ``fluxion.experimental.checkify`` names,
plus the type variable ``Out`` of JAX's annotations.

Example:
    >>> from fluxion.compat.jax_src import checkify
    >>> checkify.checkify is __import__("fluxion.experimental.checkify").experimental.checkify.checkify
    True
"""

from __future__ import annotations

from typing import TypeVar

from fluxion.experimental.checkify import *  # noqa: F403
from fluxion.experimental.checkify import __all__ as _public

Out = TypeVar("Out")
"""The output type of a checkified function (JAX's annotation type variable)."""

__all__ = [*_public, "Out"]
