"""Flattening a pytree of arrays to one vector and back (fluxion has no ``flatten_util``)."""


from collections.abc import Callable
from typing import Any

import numpy as np

import fluxion
import fluxion.numpy as jnp


def ravel_pytree(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(flat_vector, unravel)`` for a pytree of arrays (leaves promoted to a common dtype)."""
    leaves, treedef = fluxion.tree.flatten(tree)
    if not leaves:
        return jnp.zeros((0,), jnp.float32), lambda _: fluxion.tree.unflatten(treedef, [])
    arrays = [jnp.asarray(x) for x in leaves]
    shapes = [a.shape for a in arrays]
    dtypes = [a.dtype for a in arrays]
    sizes = [int(np.prod(s)) for s in shapes]
    flat = jnp.concatenate([jnp.ravel(a) for a in arrays])
    splits = np.cumsum(sizes)[:-1].tolist()

    def unravel(vector):
        pieces = jnp.split(vector, splits) if splits else [vector]
        return fluxion.tree.unflatten(treedef, [
            p.reshape(s).astype(d) for p, s, d in zip(pieces, shapes, dtypes)])

    return flat, unravel
