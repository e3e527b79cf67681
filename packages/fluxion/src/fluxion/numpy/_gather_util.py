"""The gather along the last axis used by sorting, quantile and interpolation functions.

``take_along_last(a, idx)`` picks ``a[..., idx[..., j]]`` along the last axis (indices clamped, as
JAX's gathers do): one ``lax.gather`` whose leading dimensions are batching dimensions, so it costs
the size of the result (not of ``a`` times the number of indices) and transposes to one scatter.
"""

from __future__ import annotations

from typing import Any

from fluxion import lax

__all__ = ["take_along_last"]


def take_along_last(a: Any, idx: Any) -> Any:
    """``out[..., j] = a[..., clamp(idx[..., j])]``; ``idx`` has ``a``'s batch shape (or
    broadcasts to it) and any last-axis length."""
    batch = a.shape[:-1]
    k = idx.shape[-1]
    if idx.shape[:-1] != batch:
        idx = lax.broadcast_in_dim(idx, batch + (k,), tuple(range(len(batch) - idx.ndim + 1,
                                                                  len(batch) + 1)))
    nb = len(batch)
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(nb,),
                                    start_index_map=(nb,), operand_batching_dims=tuple(range(nb)),
                                    start_indices_batching_dims=tuple(range(nb)))
    return lax.gather(a, lax.reshape(idx, batch + (k, 1)), dn, (1,) * (nb + 1),
                      mode=lax.GatherScatterMode.CLIP)
