"""Segment reductions: ``out[s]`` reduces the rows ``data[i]`` with ``segment_ids[i] == s``.

Each is one scatter (add, mul, min or max) into an array filled with the reduction's identity,
with out-of-range ids (negative ones included) dropped, as in JAX. ``bucket_size`` scatters each
bucket of that many consecutive rows separately and then reduces over the buckets (JAX's
algorithm, which can change float rounding).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.ops import segment_max
    >>> segment_max(jnp.array([1, 5, 2]), jnp.array([0, 0, 1])).tolist()
    [5, 2]
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes

__all__ = ["segment_sum", "segment_prod", "segment_min", "segment_max"]


def _identity(kind: str, dtype: np.dtype) -> Any:
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    big = kind == "min"
    if dtype == np.bool_:
        return big
    if dtypes.issubdtype(dtype, np.integer):
        info = dtypes.iinfo(dtype)
        return info.max if big else info.min
    return np.inf if big else -np.inf


_SCATTER: dict[str, Callable[..., Any]] = {"sum": lax.scatter_add, "prod": lax.scatter_mul,
                                          "min": lax.scatter_min, "max": lax.scatter_max}
_REDUCE: dict[str, Callable[..., Any]] = {"sum": jnp.sum, "prod": jnp.prod, "min": jnp.min,
                                         "max": jnp.max}


def _segment(name: str, kind: str, data: Any, segment_ids: Any, num_segments: int | None,
             indices_are_sorted: bool, unique_indices: bool, bucket_size: int | None,
             mode: Any) -> Any:
    data, segment_ids = jnp.asarray(data), jnp.asarray(segment_ids)
    if not jnp.issubdtype(segment_ids.dtype, jnp.integer):
        raise TypeError(f"{name}: segment_ids must be integers, got dtype {segment_ids.dtype}")
    if data.ndim < 1 or segment_ids.shape != data.shape[:1]:
        raise ValueError(f"{name}: segment_ids must have shape (data.shape[0],) = "
                         f"{data.shape[:1]}, got {segment_ids.shape}")
    if num_segments is None:
        try:
            num_segments = int(np.max(np.asarray(segment_ids))) + 1
        except Exception:
            raise TypeError(f"{name}: num_segments must be given (a static int) when "
                            "segment_ids is traced, e.g. inside jit") from None
    num_segments = operator.index(num_segments)
    if num_segments < 0:
        raise ValueError("num_segments must be non-negative.")
    mode = lax.GatherScatterMode.FILL_OR_DROP if mode is None else mode
    rest = data.shape[1:]
    window = tuple(range(1, 1 + len(rest)))
    init = _identity(kind, data.dtype)
    ids = segment_ids.astype(np.int32) if segment_ids.dtype.itemsize < 4 else segment_ids
    if bucket_size is None:
        out = jnp.full((num_segments,) + rest, init, data.dtype)
        dn = lax.ScatterDimensionNumbers(update_window_dims=window, inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
        return _SCATTER[kind](out, ids[:, None], data, dn, indices_are_sorted=indices_are_sorted,
                              unique_indices=unique_indices, mode=mode)
    n = data.shape[0]
    buckets = -(-n // operator.index(bucket_size))
    out = jnp.full((buckets, num_segments) + rest, init, data.dtype)
    which = (jnp.arange(n, dtype=ids.dtype) // bucket_size)[:, None]
    dn = lax.ScatterDimensionNumbers(update_window_dims=window, inserted_window_dims=(0, 1),
                                     scatter_dims_to_operand_dims=(0, 1))
    out = _SCATTER[kind](out, jnp.concatenate([which, ids[:, None]], axis=1), data, dn,
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                         mode=mode)
    return _REDUCE[kind](out, axis=0).astype(data.dtype)


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """Sums of the rows of ``data`` per segment: ``out[s] = sum(data[segment_ids == s])``
    (``num_segments`` defaults to ``max(segment_ids) + 1``; give it under ``jit``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.ops import segment_sum
        >>> segment_sum(jnp.ones((3, 2)), jnp.array([1, 1, 0])).tolist()
        [[1.0, 1.0], [2.0, 2.0]]
    """
    return _segment("segment_sum", "sum", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode)


def segment_prod(data: Any, segment_ids: Any, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode: Any = None,
                 out_sharding: Any = None) -> Any:
    """Products of the rows of ``data`` per segment (1 for an empty segment).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.ops import segment_prod
        >>> segment_prod(jnp.array([2.0, 3.0, 4.0]), jnp.array([0, 0, 2])).tolist()
        [6.0, 1.0, 4.0]
    """
    return _segment("segment_prod", "prod", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode)


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """Minimums of the rows of ``data`` per segment (``inf``, or the dtype's largest value, for
    an empty segment).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.ops import segment_min
        >>> segment_min(jnp.array([2.0, 3.0, 4.0]), jnp.array([0, 0, 1])).tolist()
        [2.0, 4.0]
    """
    return _segment("segment_min", "min", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode)


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """Maximums of the rows of ``data`` per segment (``-inf``, or the dtype's smallest value,
    for an empty segment).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.ops import segment_max
        >>> segment_max(jnp.array([2.0, 3.0, 4.0]), jnp.array([0, 0, 1])).tolist()
        [3.0, 4.0]
    """
    return _segment("segment_max", "max", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode)
