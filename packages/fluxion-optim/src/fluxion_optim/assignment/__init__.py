"""Linear assignment problems (``optax.assignment``): the Hungarian algorithm.

Example:
    >>> import fluxion.numpy as jnp
    >>> import fluxion_optim as optax
    >>> cost = jnp.array([[8, 4, 7], [5, 2, 3], [9, 6, 7], [9, 4, 8]])
    >>> i, j = optax.assignment.hungarian_algorithm(cost)
    >>> int(cost[i, j].sum())
    15
"""

from fluxion_optim.assignment._hungarian_algorithm import (
    base_hungarian_algorithm,
    hungarian_algorithm,
)

__all__ = ["base_hungarian_algorithm", "hungarian_algorithm"]
