"""Convenience functions of ``lax`` composed from the primitives: full, full_like, collapse,
broadcast_to_rank, tile, split, stack, unstack, broadcast_like, broadcast_shapes, index_take,
empty and mulhi; and ``dtype`` (JAX's ``lax.dtype``).

JAX makes several of these primitives of their own; here each is a short composition of existing
primitives (reshape, broadcast_in_dim, slice, gather, integer arithmetic), which every
transformation already handles.

Example:
    >>> from fluxion import lax
    >>> lax.full((2,), 3.0).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core import vma as _vma
from fluxion.core.trace import Tracer
from fluxion.lax import conversions as cv
from fluxion.lax import elementwise as ew
from fluxion.lax import shape_ops as so
from fluxion.lax._base import type_error, value_error
from fluxion.lax._rules import shape_of
from fluxion.lax.conversions import convert_element_type
from fluxion.lax.gather_scatter import GatherDimensionNumbers, gather
from fluxion.lax.shape_ops import broadcast, reshape
from fluxion.lax.sharding_constraint import with_out_sharding

__all__ = ["full", "full_like", "collapse", "broadcast_to_rank", "dtype", "tile", "split", "stack",
           "unstack", "broadcast_like", "broadcast_shapes", "index_take", "empty", "mulhi"]


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
    value's own dtype, weakly typed for a Python scalar), placed with ``sharding`` when given.

    As JAX's: a ``sharding`` on concrete devices places an eagerly built array and is ignored
    under tracing; one over an abstract mesh is the traced result's sharding.

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
    if hasattr(dt, "_full"):  # a key dtype: keys over filled key data, as JAX's
        return dt._full(shp, fill_value)
    out = broadcast(convert_element_type(fill_value, dt, weak), shp)
    if sharding is None or (isinstance(out, Tracer) and not _abstract_mesh(sharding)):
        return out
    return with_out_sharding("lax.full", sharding, lambda: out)


def _abstract_mesh(sharding: Any) -> bool:
    return type(getattr(sharding, "mesh", None)).__name__ == "AbstractMesh"


def _sharding_of_example(x: Any, shape: tuple[int, ...], weak: bool) -> Any:
    """JAX's full_like rule for a concrete example: a committed, strongly typed example's
    sharding when the shape is kept (or the sharding replicates)."""
    sharding = getattr(x, "sharding", None)
    if sharding is None or weak or not getattr(x, "committed", True) or _abstract_mesh(sharding):
        return None
    if shape != tuple(np.shape(x)) and not getattr(sharding, "is_fully_replicated", False):
        return None
    return sharding


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Sequence[int] | None = None,
              sharding: Any = None) -> Any:
    """An array like ``x`` (its shape and dtype unless given) filled with ``fill_value``, with
    ``sharding``, or else the sharding of a committed ``x`` whose shape is kept (as JAX's).

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
    if hasattr(dt, "_full"):  # a key dtype: keys over filled key data, as JAX's
        return dt._full(shp, fill_value)
    fill = convert_element_type(fill_value, dt, weak)
    if sharding is None and shape is None and isinstance(x, Tracer):
        # as JAX: a traced example's type sharding (Explicit mesh axes) is the result's
        out = full(shp, fill)
        typed = getattr(x.aval, "sharding", None)
        if typed is not None:
            out = with_out_sharding("lax.full_like", typed, lambda: out)
        return _vma.vary_like(x, out)
    if sharding is None and shape is None:  # as JAX: a committed example's sharding
        sharding = _sharding_of_example(x, shp, weak)
    return _vma.vary_like(x, full(shp, fill, sharding=sharding))


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


# ------------------------------------------------------------------ array helpers


def _axis(fun: str, axis: int, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise value_error(fun, f"axis {axis} is out of bounds for an array of rank {ndim - 1}"
                          if fun.endswith("stack") else
                          f"axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """Repeat ``operand`` ``reps[i]`` times along dimension ``i`` (``len(reps) == ndim``).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.tile(jnp.array([[1, 2]]), (2, 2)).tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    shape = shape_of(operand)
    reps = tuple(operator.index(r) for r in reps)
    if len(reps) != len(shape):
        raise type_error("lax.tile", f"len(reps) must equal operand.ndim, got reps={reps} for "
                         f"shape {shape}")
    if any(r < 0 for r in reps):
        raise value_error("lax.tile", f"reps must be non-negative, got {reps}")
    # (r0, s0, r1, s1, ...) then merge each pair: the operand repeats as the outer index.
    big = tuple(d for pair in zip(reps, shape) for d in pair)
    x = so.broadcast_in_dim(operand, big, tuple(range(1, 2 * len(shape), 2)))
    return so.reshape(x, tuple(r * s for r, s in zip(reps, shape)))


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list:
    """Split ``operand`` along ``axis`` into pieces of ``sizes`` (which must sum to its size).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> [p.tolist() for p in lax.split(jnp.arange(5), (2, 3))]
        [[0, 1], [2, 3, 4]]
    """
    shape = shape_of(operand)
    axis = _axis("lax.split", axis, len(shape))
    sizes = tuple(operator.index(s) for s in sizes)
    if any(s < 0 for s in sizes) or sum(sizes) != shape[axis]:
        raise value_error("lax.split", f"sizes {sizes} must be non-negative and sum to the size "
                          f"{shape[axis]} of axis {axis} of shape {shape}")
    out, start = [], 0
    for s in sizes:
        out.append(so.slice_in_dim(operand, start, start + s, axis=axis))
        start += s
    return out


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """Join same-shape arrays along a new ``axis``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.stack([jnp.array([1, 2]), jnp.array([3, 4])], axis=1).tolist()
        [[1, 3], [2, 4]]
    """
    operands = list(operands)
    if not operands:
        raise value_error("lax.stack", "needs at least one operand")
    shape = shape_of(operands[0])
    axis = _axis("lax.stack", axis, len(shape) + 1)
    return so.concatenate([so.expand_dims(x, (axis,)) for x in operands], axis)


def unstack(x: Any, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple of arrays of one rank less.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> [p.tolist() for p in lax.unstack(jnp.array([[1, 2], [3, 4]]), axis=1)]
        [[1, 3], [2, 4]]
    """
    shape = shape_of(x)
    axis = _axis("lax.unstack", axis, len(shape))
    return tuple(so.index_in_dim(x, i, axis, keepdims=False) for i in range(shape[axis]))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The NumPy broadcast of ``shapes`` (a ValueError when they do not broadcast).

    Example:
        >>> from fluxion import lax
        >>> lax.broadcast_shapes((2, 1), (3,))
        (2, 3)
    """
    shapes = [tuple(operator.index(d) for d in s) for s in shapes]
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    out = []
    for sizes in zip(*padded):
        big = {d for d in sizes if d != 1}
        if len(big) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(big.pop() if big else 1)
    return tuple(out)


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """``arr`` broadcast (NumPy rules) to the shape of ``like_arr``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.broadcast_like(jnp.array([1, 2]), jnp.zeros((2, 2))).tolist()
        [[1, 2], [1, 2]]
    """
    src, dst = shape_of(arr), shape_of(like_arr)
    if len(src) > len(dst) or broadcast_shapes(src, dst) != dst:
        raise value_error("lax.broadcast_like", f"cannot broadcast shape {src} to {dst}")
    return so.broadcast_in_dim(arr, dst, tuple(range(len(dst) - len(src), len(dst))))


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """``src`` indexed by the integer arrays ``idxs`` (one per axis in ``axes``, same length
    ``n``): the result's first dimension runs over the ``n`` index tuples, followed by ``src``'s
    other dimensions. Indices wrap modulo the axis size, as in JAX.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.index_take(jnp.arange(6).reshape(2, 3), (jnp.array([1, 0]),), (0,)).tolist()
        [[3, 4, 5], [0, 1, 2]]
    """
    shape = shape_of(src)
    axes = tuple(operator.index(a) for a in axes)
    idxs = list(idxs)
    if len(idxs) != len(axes):
        raise value_error("lax.index_take", f"needs one index array per axis, got {len(idxs)} "
                          f"index arrays for axes {axes}")
    cols = []
    for i, ax in zip(idxs, axes):
        i = so.expand_dims(i, (1,))
        size = np.array(shape[ax]).astype(dtypes.dtype(i))
        cols.append(ew.rem(ew.add(ew.rem(i, size), size), size))  # wrap, Python-style modulo
    indices = so.concatenate(cols, 1)
    sizes = tuple(1 if d in axes else n for d, n in enumerate(shape))
    dn = GatherDimensionNumbers(offset_dims=tuple(range(1, len(shape) - len(axes) + 1)),
                                collapsed_slice_dims=axes, start_index_map=axes)
    return gather(src, indices, dn, sizes)


def empty(shape: Any, dtype: Any, *, out_sharding: Any = None) -> Any:
    """An array of ``shape`` and ``dtype`` whose values are unspecified (zeros here).

    Example:
        >>> from fluxion import lax
        >>> lax.empty((2,), "float32").shape
        (2,)
    """
    shp = tuple(operator.index(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    dt = dtypes.check_and_canonicalize_user_dtype(dtype, "empty")
    return so.broadcast(cv.convert_element_type(np.zeros((), dt), dt), shp)


def mulhi(x: Any, y: Any, /) -> Any:
    """The high half of the double-width product of two integers of the same dtype, elementwise
    (``(x * y) >> bits`` computed without overflow).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.mulhi(jnp.uint32(0xFFFFFFFF), jnp.uint32(2)).tolist()
        1
    """
    dx, dy = dtypes.dtype(x), dtypes.dtype(y)
    if dx != dy or getattr(dx, "kind", None) not in tuple("iu"):  # key dtypes have no kind
        raise type_error("lax.mulhi", f"takes two integer arrays of one dtype, got {dx.name} and "
                         f"{dy.name}")
    bits = dx.itemsize * 8
    udt = np.dtype(f"uint{bits}")
    shape = broadcast_shapes(shape_of(x), shape_of(y))
    x, y = (so.broadcast_in_dim(v, shape, tuple(range(len(shape) - len(shape_of(v)), len(shape))))
            for v in (x, y))
    ux, uy = cv.convert_element_type(x, udt), cv.convert_element_type(y, udt)
    half = bits // 2
    mask = np.array((1 << half) - 1, udt)
    sh = np.array(half, udt)
    # Schoolbook multiplication on half-width digits (Hacker's Delight, mulhu).
    x0, x1 = ew.bitwise_and(ux, mask), ew.shift_right_logical(ux, sh)
    y0, y1 = ew.bitwise_and(uy, mask), ew.shift_right_logical(uy, sh)
    w0 = ew.mul(x0, y0)
    t = ew.add(ew.mul(x1, y0), ew.shift_right_logical(w0, sh))
    w1 = ew.add(ew.bitwise_and(t, mask), ew.mul(x0, y1))
    hi = ew.add(ew.add(ew.mul(x1, y1), ew.shift_right_logical(t, sh)),
                ew.shift_right_logical(w1, sh))
    if dx.kind == "u":
        return hi
    # Signed: subtract y where x < 0 and x where y < 0 (the two's complement correction).
    zeros = so.broadcast_in_dim(np.zeros((), udt), shape, ())
    sign0 = np.zeros((), dx)
    hi = ew.sub(hi, ew.select(ew.lt(x, sign0), uy, zeros))
    hi = ew.sub(hi, ew.select(ew.lt(y, sign0), ux, zeros))
    return cv.convert_element_type(hi, dx)
