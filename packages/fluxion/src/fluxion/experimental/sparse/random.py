"""Random sparse arrays, as JAX's ``jax.experimental.sparse.random``: ``random_bcoo``.

Example:
    >>> import fluxion
    >>> m = random_bcoo(fluxion.random.key(0), (3, 4), nse=3)
    >>> m.shape, m.nse
    ((3, 4), 3)
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Sequence

from fluxion import numpy as jnp
from fluxion import random as _random
from fluxion.experimental.sparse.bcoo import BCOO
from fluxion.transforms.batching import vmap

__all__ = ["random_bcoo"]


def random_bcoo(key: Any, shape: Sequence[int], *, dtype: Any = None,
                indices_dtype: Any = None, nse: float | int = 0.2, n_batch: int = 0,
                n_dense: int = 0, unique_indices: bool = True, sorted_indices: bool = False,
                generator: Callable[..., Any] = _random.uniform, **kwds: Any) -> BCOO:
    """A random BCOO array: ``nse`` stored elements per batch (a fraction of the sparse size
    when ``0 < nse < 1``) at positions drawn by ``random.choice`` (without replacement when
    ``unique_indices``), values from ``generator(key, shape=, dtype=, **kwds)``. The same
    numbers as JAX's for the same key.

    Example:
        >>> import fluxion
        >>> random_bcoo(fluxion.random.key(1), (2, 5), nse=2, n_batch=1).data.shape
        (2, 2)
    """
    shape = tuple(operator.index(s) for s in shape)
    n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
        raise ValueError(f"Invalid {n_batch=}, {n_dense=} for {shape=}")
    n_sparse = len(shape) - n_batch - n_dense
    batch_shape = shape[:n_batch]
    sparse_shape = shape[n_batch:n_batch + n_sparse]
    dense_shape = shape[n_batch + n_sparse:]
    sparse_size = math.prod(sparse_shape)
    if not 0 <= nse < sparse_size:
        raise ValueError(f"got {nse=}, expected to be between 0 and {sparse_size}")
    if 0 < nse < 1:
        nse = int(math.ceil(nse * sparse_size))
    nse = operator.index(nse)
    if dtype is None:
        dtype = jnp.float_
    if indices_dtype is None:
        indices_dtype = jnp.int_
    if sparse_size > jnp.iinfo(indices_dtype).max:
        raise ValueError(f"indices_dtype={indices_dtype} does not have enough range to "
                         f"generate sparse indices of size {sparse_size}.")

    def draw(k: Any) -> Any:
        if not sparse_shape:
            return jnp.zeros((nse, n_sparse), indices_dtype)
        flat = _random.choice(k, sparse_size, shape=(nse,),
                              replace=not unique_indices).astype(indices_dtype)
        return jnp.column_stack(jnp.unravel_index(flat, sparse_shape))

    keys = _random.split(key, math.prod(batch_shape) + 1)
    data = generator(keys[0], shape=batch_shape + (nse,) + dense_shape, dtype=dtype, **kwds)
    indices = vmap(draw)(keys[1:]).reshape(batch_shape + (nse, n_sparse))
    mat = BCOO((data, indices), shape=shape)
    return mat.sort_indices() if sorted_indices else mat
