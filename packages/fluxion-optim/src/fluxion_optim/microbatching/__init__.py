"""Microbatching (``optax.microbatching``): evaluate a function on slices of a batch in a
sequential loop and combine the results (sum, mean, running mean or concatenation), so a large
batch fits in memory.

Example:
    >>> import fluxion.numpy as jnp
    >>> import fluxion_optim as optax
    >>> f = optax.microbatching.micro_vmap(lambda x: x ** 2, microbatch_size=2)
    >>> f(jnp.arange(4.0)).tolist()
    [0.0, 1.0, 4.0, 9.0]
"""

from fluxion_optim.microbatching._microbatching import (
    AccumulationType,
    Accumulator,
    micro_grad,
    micro_vmap,
    microbatch,
    reshape_batch_axis,
)

__all__ = ["AccumulationType", "Accumulator", "micro_grad", "micro_vmap", "microbatch",
           "reshape_batch_axis"]
