"""Convenience functions of ``lax`` built from primitives: full, full_like, collapse,
broadcast_to_rank; and ``dtype`` (JAX's ``lax.dtype``).

Example:
    >>> from fluxion import lax
    >>> lax.full((2,), 3.0).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

from fluxion.core import dtypes
from fluxion.core import vma as _vma
from fluxion.lax._base import type_error, value_error
from fluxion.lax._rules import shape_of
from fluxion.lax.conversions import convert_element_type
from fluxion.lax.shape_ops import broadcast, reshape

__all__ = ["full", "full_like", "collapse", "broadcast_to_rank", "dtype"]


def dtype(x: Any) -> Any:
    """The canonical dtype of a value, type or dtype name, as ``jax.lax.dtype``: Python scalars
    give the default dtypes, 64-bit dtypes are truncated when x64 is off (named ones warn).

    Example:
        >>> from fluxion import lax
        >>> import numpy as np
        >>> lax.dtype(1.0), lax.dtype(np.int8)
        (dtype('float32'), dtype('int8'))
    """
    return dtypes.dtype(x, canonicalize=True)


def _canon_shape(fun: str, shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(operator.index(d) for d in (shape if isinstance(shape, (tuple, list))
                                                 else (shape,)))
    except TypeError:
        raise type_error(fun, f"shape must be a sequence of integers, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise type_error(fun, f"shape {dims} has a negative dimension")
    return dims


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *, sharding: Any = None) -> Any:
    """An array of ``shape`` filled with the scalar ``fill_value`` (of ``dtype``, or of the fill
    value's own dtype, weakly typed for a Python scalar).

    Example:
        >>> from fluxion import lax
        >>> lax.full((2, 2), 1, "float32").tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    shp = _canon_shape("lax.full", shape)
    if shape_of(fill_value):
        raise type_error("lax.full", f"fill_value must be a scalar, got shape {shape_of(fill_value)}")
    if dtype is None:
        weak = dtypes.is_weakly_typed(fill_value)
        dt = dtypes.dtype(fill_value, canonicalize=True)
    else:
        weak = False
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "full")
    return broadcast(convert_element_type(fill_value, dt, weak), shp)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Sequence[int] | None = None,
              sharding: Any = None) -> Any:
    """An array like ``x`` (its shape and dtype unless given) filled with ``fill_value``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.full_like(jnp.zeros((2,), "int32"), 7).tolist()
        [7, 7]
    """
    shp = shape_of(x) if shape is None else _canon_shape("lax.full_like", shape)
    weak = dtype is None and dtypes.is_weakly_typed(x)
    dt = dtypes.dtype(x, canonicalize=True) if dtype is None else \
        dtypes.check_and_canonicalize_user_dtype(dtype, "full_like")
    return _vma.vary_like(x, broadcast(convert_element_type(fill_value, dt, weak), shp))


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """Merge dimensions ``start_dimension:stop_dimension`` of ``operand`` into one.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.collapse(jnp.zeros((2, 3, 4)), 1).shape
        (2, 12)
    """
    shape = shape_of(operand)
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise value_error("lax.collapse", f"invalid dimension range [{start_dimension}:"
                          f"{stop_dimension}] for shape {shape}")
    new_shape = shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:]
    return reshape(operand, new_shape)


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """``x`` with leading dimensions of size 1 added up to ``rank``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.broadcast_to_rank(jnp.ones(3), 3).shape
        (1, 1, 3)
    """
    nd = len(shape_of(x))
    if nd == rank and hasattr(x, "aval"):
        return x
    return broadcast(x, (1,) * (rank - nd))
