"""``jax._src.state`` (flax.nnx imports ``jax._src.state.types``): see :mod:`.types`.

Example:
    >>> from fluxion.compat.jax_src.state import types
    >>> types.AbstractRef.__name__
    'AbstractRef'
"""

from __future__ import annotations

__all__: list[str] = []
