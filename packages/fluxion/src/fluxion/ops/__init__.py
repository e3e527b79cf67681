"""``fluxion.ops``: segment reductions (JAX's ``jax.ops``).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion import ops
    >>> ops.segment_sum(jnp.arange(5.0), jnp.array([0, 0, 1, 1, 1]), 2).tolist()
    [1.0, 9.0]
"""

from fluxion.ops.segment import segment_max, segment_min, segment_prod, segment_sum

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
