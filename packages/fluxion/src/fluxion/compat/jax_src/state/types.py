"""``jax._src.state.types``: ``AbstractRef``, the abstract value of a mutable array reference.

Fluxion has no mutable references (``jax.new_ref``/``jax.Ref`` are not provided, see
docs/guide/coming-from-jax.md), so no value or abstract value is ever an ``AbstractRef``:
``isinstance(x, AbstractRef)`` is False for everything, which is the right answer for code
(flax.nnx) that asks whether a value is a reference.

Example:
    >>> import fluxion.numpy as jnp
    >>> isinstance(jnp.ones(2), AbstractRef)
    False
"""

from __future__ import annotations

from fluxion.ref import AbstractRef

__all__ = ["AbstractRef"]
