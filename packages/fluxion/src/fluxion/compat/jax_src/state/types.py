"""``jax._src.state.types``: ``AbstractRef``, the abstract value of a mutable array reference.

``fluxion.typeof`` of a reference (``fluxion.new_ref``) is an ``AbstractRef``; of an array it is
its ``ShapedArray``. flax.nnx asks ``isinstance(jax.typeof(x), AbstractRef)`` to tell references
from arrays.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> isinstance(fluxion.typeof(fluxion.new_ref(jnp.ones(2))), AbstractRef)
    True
    >>> isinstance(fluxion.typeof(jnp.ones(2)), AbstractRef)
    False
"""

from __future__ import annotations

from fluxion.ref import AbstractRef

__all__ = ["AbstractRef"]
