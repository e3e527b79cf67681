"""Small gathers used by the statistics, sorting and set functions.

``take_along_last(a, idx)`` picks ``a[..., idx[..., j]]`` along the last axis (indices clamped, as
JAX's gathers do). It uses ``lax.gather`` when the slicing module provides it, and otherwise a
one-hot select-and-reduce, which is exact (one selected element per output) and fine for the
small sizes these functions see.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax

__all__ = ["take_along_last"]


def take_along_last(a: Any, idx: Any) -> Any:
    """``out[..., j] = a[..., clamp(idx[..., j])]``; ``idx`` has ``a``'s batch shape (or
    broadcasts to it) and any last-axis length."""
    n = a.shape[-1]
    batch = a.shape[:-1]
    k = idx.shape[-1]
    if idx.shape[:-1] != batch:
        idx = lax.broadcast_in_dim(idx, batch + (k,), tuple(range(len(batch) - idx.ndim + 1,
                                                                  len(batch) + 1)))
    it = idx.dtype
    idx = lax.clamp(lax.convert_element_type(0, it), idx, lax.convert_element_type(max(n - 1, 0),
                                                                                   it))
    shp = batch + (k, n)
    nb = len(batch)
    onehot = lax.eq(lax.broadcast_in_dim(idx, shp, tuple(range(nb + 1))),
                    lax.broadcasted_iota(it, shp, nb + 1))
    ab = lax.broadcast_in_dim(a, shp, tuple(range(nb)) + (nb + 1,))
    if a.dtype == np.bool_:
        return lax.reduce_or(lax.bitwise_and(onehot, ab), (nb + 1,))
    zero = lax.broadcast_in_dim(lax.convert_element_type(0, a.dtype, weak_type=a.weak_type),
                                shp, ())
    return lax.reduce_sum(lax.select(onehot, ab, zero), (nb + 1,))
