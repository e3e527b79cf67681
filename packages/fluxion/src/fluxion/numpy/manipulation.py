"""Array manipulation: tiling and repeating, flips and rolls, insert/delete/append, stacks, and
index-based selection (take, take_along_axis, choose, compress, select, ...). Splits are in
:mod:`fluxion.numpy.splitting`.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.tile(jnp.array([1, 2]), 2).tolist()
    [1, 2, 1, 2]
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Sequence

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.lax.slicing import dynamic_slice_in_dim
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._advanced_indexing import gather_along_axis
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import (
    canonical_axes,
    canonical_axis,
    check_arraylike,
    concrete_array,
    ensure_array,
    promote_dtypes,
)
from fluxion.numpy.creation import arange, array, asarray
from fluxion.numpy.cumulative import cumsum
from fluxion.numpy.reductions import argmax
from fluxion.numpy.setops import diag_indices, nonzero, unravel_index
from fluxion.numpy.shape import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_arrays,
    broadcast_to,
    concatenate,
    moveaxis,
    ravel,
    reshape,
    stack,
    swapaxes,
    transpose,
)
from fluxion.numpy.sorting import argsort, sort

__all__ = [
    "tile", "repeat", "flip", "fliplr", "flipud", "roll", "rollaxis", "rot90", "insert",
    "delete", "append", "resize", "trim_zeros", "column_stack", "dstack", "block", "unstack", "matrix_transpose", "take",
    "take_along_axis", "put_along_axis", "choose", "compress", "extract", "select",
    "piecewise", "place", "put", "fill_diagonal",
]


def tile(A: Any, reps: Any) -> Any:
    """``A`` repeated ``reps`` times along each axis.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.tile(jnp.array([[1, 2]]), (2, 1)).tolist()
        [[1, 2], [1, 2]]
    """
    check_arraylike("tile", A, extended=True)
    a = ensure_array(A)
    try:
        reps_t = tuple(operator.index(r) for r in reps)
    except TypeError:
        reps_t = (operator.index(reps),)
    reps_t = (1,) * (a.ndim - len(reps_t)) + reps_t
    if len(reps_t) > a.ndim:
        a = lax.expand_dims(a, tuple(range(len(reps_t) - a.ndim)))
    # Broadcast each axis d to (reps, d) and merge.
    shp = []
    dims = []
    for i, (r, d) in enumerate(zip(reps_t, a.shape)):
        shp += [r, d]
        dims.append(2 * i + 1)
    out = lax.broadcast_in_dim(a, tuple(shp), tuple(dims))
    return lax.reshape(out, tuple(r * d for r, d in zip(reps_t, a.shape)))


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None, out_sharding: Any = None) -> Any:
    """Repeat each element of ``a`` ``repeats`` times along ``axis`` (flattened when None).

    Under jit, array ``repeats`` need a static ``total_repeat_length``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.repeat(jnp.array([1, 2]), jnp.array([1, 2])).tolist()
        [1, 2, 2]
    """
    if isinstance(repeats, (int, np.integer)):
        check_arraylike("repeat", a, extended=True)
    else:
        check_arraylike("repeat", a, repeats, extended=True)
    arr = ensure_array(a)
    if axis is None:
        arr, axis = ravel(arr), 0
    ax = canonical_axis(axis, max(arr.ndim, 1), "repeat")
    if total_repeat_length is None:
        reps = repeats
        if not isinstance(reps, (int, np.integer)):
            reps = np.asarray(concrete_array(reps, "repeat", "repeats (or pass a static "
                                              "total_repeat_length)"))
        if np.ndim(reps) == 0 and arr.ndim != 0:
            r = operator.index(int(reps))
            aux = list(arr.shape)
            aux.insert(ax + 1, r)
            out = lax.broadcast_in_dim(arr, tuple(aux), tuple(i for i in range(len(aux))
                                                              if i != ax + 1))
            shp = list(arr.shape)
            shp[ax] *= r
            return lax.reshape(out, tuple(shp))
        reps = np.ravel(reps)
        if arr.ndim != 0:
            reps = np.broadcast_to(reps, (arr.shape[ax],))
        total_repeat_length = int(np.sum(reps))
        reps_arr = reps.astype(np.int32)
    else:
        reps_arr = repeats
    if arr.ndim == 0:
        if np.size(reps_arr) == 1:
            return lax.broadcast_in_dim(arr, (total_repeat_length,), ())
        raise ValueError("`repeat` with a scalar parameter `a` is only implemented for scalar "
                         "values of the parameter `repeats`.")
    if total_repeat_length == 0:
        shp = list(arr.shape)
        shp[ax] = 0
        return lax.reshape(lax.slice_in_dim(arr, 0, 0, axis=ax), tuple(shp))
    if arr.shape[ax] == 0:
        return arr
    return _repeat_gather(arr, reps_arr, axis=ax, total=total_repeat_length)


@one_program_static(static_argnames=("axis", "total"))
def _repeat_gather(arr: Any, repeats: Any, axis: int, total: int) -> Any:
    """Entry i of ``arr`` along ``axis`` ``repeats[i]`` times (``total`` in all), one program."""
    reps = broadcast_to(ravel(ensure_array(repeats)), (arr.shape[axis],))
    excl = roll(reps, 1).at[0].set(0)
    starts = cumsum(excl)
    marks = lax.broadcast_in_dim(lax.convert_element_type(0, np.int32), (total,), ())
    marks = marks.at[starts].add(1)
    gidx = uf.subtract(cumsum(marks), 1)
    return take(arr, gidx, axis=axis)


def flip(m: Any, axis: Any = None) -> Any:
    """``m`` with the order of elements reversed along ``axis`` (all axes by default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.flip(jnp.array([1, 2, 3])).tolist()
        [3, 2, 1]
    """
    check_arraylike("flip", m, extended=True)
    arr = ensure_array(m)
    axes = canonical_axes(axis, arr.ndim, "flip")
    return lax.rev(arr, axes) if axes else arr


def fliplr(m: Any) -> Any:
    """``m`` reversed along axis 1.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fliplr(jnp.array([[1, 2]])).tolist()
        [[2, 1]]
    """
    return flip(m, 1)


def flipud(m: Any) -> Any:
    """``m`` reversed along axis 0.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.flipud(jnp.array([[1], [2]])).tolist()
        [[2], [1]]
    """
    return flip(m, 0)


@one_program_static(static_argnames=("shift", "axis"))
def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """Roll elements of ``a`` by ``shift`` along ``axis`` (the flattened array when None).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.roll(jnp.array([1, 2, 3]), 1).tolist()
        [3, 1, 2]
    """
    check_arraylike("roll", a, extended=True)
    arr = ensure_array(a)
    if axis is None:
        return reshape(roll(ravel(arr), shift, 0), arr.shape)
    # one integer, or any sequence of them (a tuple, list, range, 1-D integer array), as JAX's
    axes = tuple(canonical_axis(x, arr.ndim, "roll") for x in (
        (axis,) if isinstance(axis, (int, np.integer)) or np.ndim(axis) == 0 else axis))
    try:
        shifts = tuple(operator.index(s) for s in (shift if isinstance(shift, (tuple, list))
                                                   else (shift,)))
    except TypeError:
        sh = ensure_array(shift)
        bshape = np.broadcast_shapes(sh.shape, np.shape(axes))
        if len(bshape) != 1:
            raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D "
                             "arrays") from None
        shb = broadcast_to(sh, bshape)
        for j, ax in enumerate(np.broadcast_to(np.asarray(axes), bshape)):
            n = arr.shape[int(ax)]
            s = lax.convert_element_type(lax.reshape(lax.slice(shb, (j,), (j + 1,)), ()),
                                         np.int32)
            s = uf.remainder(s, np.int32(max(n, 1)))
            doubled = lax.concatenate([arr, arr], int(ax))
            arr = dynamic_slice_in_dim(doubled, uf.subtract(np.int32(n), s), n, axis=int(ax))
        return arr
    for ax, s in zip(*np.broadcast_arrays(np.asarray(axes), np.asarray(shifts))):
        ax, s = int(ax), int(s)
        n = arr.shape[ax]
        if n == 0:
            continue
        i = (-s) % n
        arr = lax.concatenate([lax.slice_in_dim(arr, i, n, axis=ax),
                               lax.slice_in_dim(arr, 0, i, axis=ax)], ax)
    return arr


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """Move ``axis`` so that it lies before position ``start``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.rollaxis(jnp.zeros((2, 3, 4)), 2).shape
        (4, 2, 3)
    """
    check_arraylike("rollaxis", a, extended=True)
    arr = ensure_array(a)
    ax = canonical_axis(axis, arr.ndim, "rollaxis")
    if not -arr.ndim <= start <= arr.ndim:
        raise ValueError(f"start={start} must satisfy {-arr.ndim}<=start<={arr.ndim}")
    if start < 0:
        start += arr.ndim
    if start > ax:
        start -= 1
    return moveaxis(arr, ax, start)


@one_program_static(static_argnames=("k", "axes"))
def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """Rotate ``m`` by 90 degrees ``k`` times in the plane of ``axes``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.rot90(jnp.array([[1, 2], [3, 4]])).tolist()
        [[2, 4], [1, 3]]
    """
    check_arraylike("rot90", m, extended=True)
    arr = ensure_array(m)
    if arr.ndim < 2:
        raise ValueError(f"rot90 requires its first argument to have ndim at least two, but got "
                         f"first argument of shape {arr.shape}, which has ndim {arr.ndim}")
    a1 = canonical_axis(axes[0], arr.ndim, "rot90")
    a2 = canonical_axis(axes[1], arr.ndim, "rot90")
    if a1 == a2:
        raise ValueError("Axes must be different")
    k = k % 4
    if k == 0:
        return arr
    if k == 2:
        return flip(flip(arr, a1), a2)
    perm = list(range(arr.ndim))
    perm[a1], perm[a2] = perm[a2], perm[a1]
    if k == 1:
        return transpose(flip(arr, a2), perm)
    return flip(transpose(arr, perm), a2)


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """``arr`` with ``values`` inserted before the indices ``obj`` along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.insert(jnp.array([1, 2, 3]), 1, 9).tolist()
        [1, 9, 2, 3]
    """
    check_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj, values, extended=True)
    a = ensure_array(arr)
    if axis is None:
        a, axis = ravel(a), 0
    ax = canonical_axis(axis, a.ndim, "insert")
    if isinstance(obj, slice):
        idx = arange(*obj.indices(a.shape[ax]))
    else:
        idx = ensure_array(obj)
    if idx.ndim > 1:
        raise ValueError("fluxion.numpy.insert(): obj must be a slice, a one-dimensional array, "
                         f"or a scalar; got {obj}")
    if not dtypes.issubdtype(idx.dtype, np.integer):
        if idx.size == 0 and not hasattr(obj, "aval"):
            idx = lax.convert_element_type(idx, dtypes.default_int_dtype())
        else:
            raise ValueError(f"fluxion.numpy.insert(): index array must be integer typed; got "
                             f"{obj}")
    vals = array(values, ndmin=a.ndim, dtype=a.dtype)
    if idx.size == 1:
        index = lax.reshape(idx, ())
        if idx.ndim == 0:
            vals = moveaxis(vals, 0, ax)
        idx = lax.broadcast_in_dim(index, (vals.shape[ax],), ())
    n_in = a.shape[ax]
    n_ins = np.broadcast_shapes(idx.shape, (vals.shape[ax],))[0]
    out_shape = list(a.shape)
    out_shape[ax] += n_ins
    out = lax.full_like(a, 0, shape=tuple(out_shape))  # key arrays: keys of zero data
    idx = uf.add(idx, lax.mul(lax.convert_element_type(lax.lt(idx, _zero(idx)), idx.dtype),
                              lax.convert_element_type(n_in, idx.dtype)))
    idx = uf.clip(idx, 0, n_in)
    vind = idx.at[argsort(idx)].add(arange(n_ins, dtype=idx.dtype))
    mask = lax.broadcast_in_dim(True, (n_in + n_ins,), ()).at[vind].set(False)
    aind = nonzero(mask, size=n_in)[0]
    pre = (slice(None),) * ax
    vshape = list(out_shape)
    vshape[ax] = n_ins
    out = out.at[pre + (vind,)].set(broadcast_to(vals, tuple(vshape)))
    return out.at[pre + (aind,)].set(a)


def _zero(x: Any) -> Any:
    return lax.convert_element_type(0, x.dtype)


def delete(arr: Any, obj: Any, axis: int | None = None, *,
           assume_unique_indices: bool = False) -> Any:
    """``arr`` without the entries ``obj`` (an int, slice, int array or bool mask) along
    ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.delete(jnp.array([1, 2, 3]), 1).tolist()
        [1, 3]
    """
    check_arraylike("delete", arr, extended=True)
    a = ensure_array(arr)
    if axis is None:
        a, axis = ravel(a), 0
    ax = canonical_axis(axis, a.ndim, "delete")
    pre = (slice(None),) * ax
    if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
        o = canonical_axis(obj, a.shape[ax], "delete")
        return concatenate([a[pre + (slice(0, o),)], a[pre + (slice(o + 1, None),)]], axis=ax)
    if isinstance(obj, slice):
        obj = np.arange(a.shape[ax])[obj]
        assume_unique_indices = True
    if hasattr(obj, "__jax_array__"):
        obj = obj.__jax_array__()
    odt = dtypes.dtype(obj) if not isinstance(obj, (list, tuple)) else np.asarray(obj).dtype
    if dtypes.issubdtype(odt, np.integer) and assume_unique_indices:
        oa = ravel(asarray(obj))
        n = a.shape[ax]
        oa = uf.clip(uf.add(oa, lax.mul(lax.convert_element_type(lax.lt(oa, _zero(oa)), oa.dtype),
                                     lax.convert_element_type(n, oa.dtype))), 0, n)
        oa = sort(oa)
        oa = uf.subtract(oa, arange(oa.shape[0], dtype=oa.dtype))
        i = arange(n - oa.shape[0], dtype=oa.dtype)
        hits = lax.ge(lax.broadcast_in_dim(i, (oa.shape[0], i.shape[0]), (1,)),
                      lax.broadcast_in_dim(oa, (oa.shape[0], i.shape[0]), (0,)))
        i = uf.add(i, lax.reduce_sum(lax.convert_element_type(hits, i.dtype), (0,)))
        return a[pre + (i,)]
    oarr = concrete_array(obj, "delete", "'obj' array argument")
    if np.issubdtype(oarr.dtype, np.integer):
        mask = np.ones(a.shape[ax], dtype=bool)
        mask[oarr] = False
    elif oarr.dtype == bool:
        if oarr.shape != (a.shape[ax],):
            raise ValueError("np.delete(arr, obj): for boolean indices, obj must be "
                             "one-dimensional with length matching specified axis.")
        mask = ~oarr
    else:
        raise ValueError(f"np.delete(arr, obj): got obj.dtype={oarr.dtype}; must be integer or "
                         "bool.")
    keep = np.nonzero(mask)[0]
    if keep.size == a.shape[ax]:
        return a
    return a[pre + (asarray(keep.astype(np.int32)),)]


@one_program_static(static_argnames=("axis",))
def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """``values`` appended to ``arr`` (both flattened when ``axis`` is None).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.append(jnp.array([1, 2]), 3).tolist()
        [1, 2, 3]
    """
    check_arraylike("append", arr, values, extended=True)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis=axis)


def resize(a: Any, new_shape: Any) -> Any:
    """``a`` flattened, repeated as needed and reshaped to ``new_shape``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.resize(jnp.array([1, 2, 3]), (2, 2)).tolist()
        [[1, 2], [3, 1]]
    """
    check_arraylike("resize", a, extended=True)
    shp = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(
        operator.index(d) for d in new_shape)
    if any(d < 0 for d in shp):
        raise ValueError("all elements of `new_shape` must be non-negative")
    arr = ravel(ensure_array(a))
    size = math.prod(shp)
    if arr.size == 0 or size == 0:
        return lax.full_like(arr, 0, shape=shp)
    reps = -(-size // arr.size)
    return reshape(lax.slice_in_dim(tile(arr, reps), 0, size, axis=0), shp)


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """``filt`` without leading (``'f'``) and/or trailing (``'b'``) zeros (needs a concrete
    input).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.trim_zeros(jnp.array([0, 1, 2, 0])).tolist()
        [1, 2]
    """
    check_arraylike("trim_zeros", filt)
    arr = ensure_array(filt)
    host = concrete_array(arr, "trim_zeros", "filt")
    axes = set(canonical_axes(axis, arr.ndim, "trim_zeros"))
    t = trim.lower()
    if not axes or ("f" not in t and "b" not in t):
        return arr
    sl = []
    for ax in range(arr.ndim):
        if ax not in axes:
            sl.append(slice(None))
            continue
        other = tuple(i for i in range(arr.ndim) if i != ax)
        mask = np.any(host != 0, axis=other) if other else host != 0
        if not mask.any():
            sl.append(slice(0, 0))
            continue
        start = int(np.argmax(mask)) if "f" in t else None
        stop = arr.shape[ax] - int(np.argmax(mask[::-1])) if "b" in t else None
        sl.append(slice(start, stop))
    return arr[tuple(sl)]


def column_stack(tup: Any) -> Any:
    """Stack 1-D arrays as columns (2-D arrays as they are) into a 2-D array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.column_stack([jnp.array([1, 2]), jnp.array([3, 4])]).tolist()
        [[1, 3], [2, 4]]
    """
    if hasattr(tup, "ndim") and not isinstance(tup, (list, tuple)):
        tup = list(tup) if tup.ndim < 3 else tup
        if not isinstance(tup, list):
            return tup
    check_arraylike("column_stack", *tup, extended=True)
    arrs = [transpose(atleast_2d(x)) if ensure_array(x).ndim < 2 else ensure_array(x)
            for x in tup]
    return concatenate(arrs, axis=1)


def dstack(tup: Any, dtype: Any = None) -> Any:
    """Stack arrays along the third axis (after making them at least 3-D).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.dstack([jnp.array([1, 2]), jnp.array([3, 4])]).shape
        (1, 2, 2)
    """
    if hasattr(tup, "ndim") and not isinstance(tup, (list, tuple)):
        tup = list(tup)
    check_arraylike("dstack", *tup, extended=True)
    return concatenate([atleast_3d(m) for m in tup], axis=2, dtype=dtype)


def _atleast_nd(x: Any, n: int) -> Any:
    return x if x.ndim >= n else lax.reshape(x, (1,) * (n - x.ndim) + x.shape)


def _block(xs: Any) -> tuple[Any, int]:
    if isinstance(xs, tuple):
        raise ValueError(f"fluxion.numpy.block does not allow tuples, got {xs}")
    if isinstance(xs, list):
        if not xs:
            raise ValueError("fluxion.numpy.block does not allow empty list arguments")
        parts = [_block(x) for x in xs]
        depths = [d for _, d in parts]
        if any(d != depths[0] for d in depths[1:]):
            raise ValueError("Mismatched list depths in fluxion.numpy.block")
        rank = max(depths[0], max(p.ndim for p, _ in parts))
        return concatenate([_atleast_nd(p, rank) for p, _ in parts], axis=-depths[0]), depths[0] + 1
    return ensure_array(xs), 1


def block(arrays: Any) -> Any:
    """Assemble an array from nested lists of blocks.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.block([[jnp.zeros((1, 1)), jnp.ones((1, 1))]]).tolist()
        [[0.0, 1.0]]
    """
    return _block(arrays)[0]


def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.unstack(jnp.array([[1, 2], [3, 4]]))]
        [[1, 2], [3, 4]]
    """
    check_arraylike("unstack", x, extended=True)
    a = ensure_array(x)
    if a.ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    ax = canonical_axis(axis, a.ndim, "unstack")
    return tuple(lax.index_in_dim(a, i, ax, keepdims=False) for i in range(a.shape[ax]))


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes of ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.matrix_transpose(jnp.zeros((3, 1, 2))).shape
        (3, 2, 1)
    """
    check_arraylike("matrix_transpose", x, extended=True)
    a = ensure_array(x)
    if a.ndim < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got "
                         f"ndim={a.ndim}")
    return swapaxes(a, -1, -2)


def take(a: Any, indices: Any, axis: int | None = None, out: None = None, mode: str | None = None,
         unique_indices: bool = False, indices_are_sorted: bool = False,
         fill_value: Any = None) -> Any:
    """Elements of ``a`` at ``indices`` along ``axis`` (flattened when None). Out-of-bound
    indices give ``fill_value`` (NaN / the dtype's extreme) unless ``mode`` is 'clip' or 'wrap'.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.take(jnp.array([10, 20, 30]), jnp.array([2, 0])).tolist()
        [30, 10]
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to fluxion.numpy.take is not supported.")
    check_arraylike("take", a, indices, extended=True)
    arr, idx = ensure_array(a), ensure_array(indices)
    if idx.dtype == np.bool_:  # positions 0 and 1 (JAX's arithmetic on them), never a mask
        idx = lax.convert_element_type(idx, np.int32)
    elif not dtypes.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"take: indices must have an integer type, got {idx.dtype}")
    if axis is None:
        arr, ax = ravel(arr), 0
    else:
        ax = canonical_axis(axis, arr.ndim, "take")
    n = arr.shape[ax]
    if n == 0:
        if idx.size != 0:
            raise IndexError("Cannot do a non-empty fluxion.numpy.take() from an empty axis.")
        return arr
    pre = (slice(None),) * ax
    if mode is None or mode == "fill":
        return arr.at[pre + (idx,)].get(mode="fill", fill_value=fill_value,
                                        unique_indices=unique_indices,
                                        indices_are_sorted=indices_are_sorted)
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode to fluxion.numpy.take is not supported.")
    if mode == "wrap":
        idx = uf.remainder(idx, lax.convert_element_type(n, idx.dtype))
        return arr.at[pre + (idx,)].get(mode="promise_in_bounds")
    if mode == "clip":
        return arr.at[pre + (idx,)].get(mode="clip")
    raise ValueError(f"Invalid mode '{mode}' for np.take")


def _along_axis_index(shape: tuple[int, ...], indices: Any, axis: int) -> tuple:
    idx = []
    nd = len(shape)
    for i, d in enumerate(shape):
        if i == axis:
            idx.append(indices)
        else:
            s = [1] * nd
            s[i] = d
            idx.append(lax.broadcast_in_dim(lax.iota(np.int32, d), tuple(s), (i,)))
    return tuple(idx)


def take_along_axis(arr: Any, indices: Any, axis: int | None = -1, mode: Any = None,
                    fill_value: Any = None) -> Any:
    """``arr`` indexed by ``indices`` along ``axis`` (other axes broadcast against each other).

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = jnp.array([[3, 1], [0, 2]])
        >>> jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1).tolist()
        [[1, 3], [0, 2]]
    """
    check_arraylike("take_along_axis", arr, indices, extended=True)
    a, idx = ensure_array(arr), ensure_array(indices)
    if not dtypes.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"take_along_axis indices must be of integer type, got {idx.dtype}")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape "
                             f"{idx.shape}")
        a, axis = ravel(a), 0
    if a.ndim != idx.ndim:
        raise ValueError(f"indices and arr must have the same number of dimensions; {idx.ndim} "
                         f"vs. {a.ndim}")
    ax = canonical_axis(axis, a.ndim, "take_along_axis")
    arr_shape = tuple(1 if i == ax else d for i, d in enumerate(a.shape))
    out_shape = np.broadcast_shapes(idx.shape, arr_shape)
    if a.shape[ax] == 0:
        return lax.broadcast_in_dim(lax.convert_element_type(0, a.dtype), out_shape, ())
    return gather_along_axis(a, idx, ax, mode, fill_value)


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True,
                   *, mode: str | None = None) -> Any:
    """A copy of ``arr`` with ``values`` written at ``indices`` along ``axis``; pass
    ``inplace=False`` (arrays are immutable).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.put_along_axis(jnp.zeros(3), jnp.array([1]), 5.0, 0, inplace=False).tolist()
        [0.0, 5.0, 0.0]
    """
    if inplace:
        raise ValueError("fluxion.numpy.put_along_axis cannot modify arrays in-place, because "
                         "arrays are immutable. Pass inplace=False to instead return an updated "
                         "array.")
    check_arraylike("put_along_axis", arr, indices, values)
    a, idx, v = ensure_array(arr), ensure_array(indices), ensure_array(values)
    orig_shape, orig_axis = a.shape, axis
    if axis is None:
        a, axis = ravel(a), 0
    if a.ndim != idx.ndim:
        raise ValueError(f"put_along_axis arguments 'arr' and 'indices' must have same ndim. Got "
                         f"arr.ndim={a.ndim} and indices.ndim={idx.ndim}.")
    ax = canonical_axis(axis, a.ndim, "put_along_axis")
    v = broadcast_to(v, idx.shape)
    full_idx = _along_axis_index(tuple(d if i != ax else 1 for i, d in enumerate(idx.shape)),
                                 idx, ax)
    out = a.at[full_idx].set(v, mode=mode)
    return reshape(out, orig_shape) if orig_axis is None else out


def choose(a: Any, choices: Sequence[Any], out: None = None, mode: str = "raise") -> Any:
    """Elementwise pick from ``choices`` by the integer array ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.choose(jnp.array([0, 1]), [jnp.array([1, 2]), jnp.array([3, 4])]).tolist()
        [1, 4]
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to fluxion.numpy.choose is not supported.")
    check_arraylike("choose", a, *choices, extended=True)
    arr = ensure_array(a)
    if not dtypes.issubdtype(arr.dtype, np.integer):
        raise ValueError("`a` array must be integer typed")
    n = len(choices)
    if mode == "raise":
        host = concrete_array(arr, "choose", "a (with mode='raise'; use mode='wrap' or 'clip')")
        if np.any((host < 0) | (host >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        arr = uf.remainder(arr, n)
    elif mode == "clip":
        arr = uf.clip(arr, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    from fluxion.numpy import grids  # reason: a rarely used family, loaded on first use

    arr, *chs = broadcast_arrays(arr, *choices)
    stacked = stack(chs)
    return stacked[(arr,) + tuple(grids.indices(arr.shape, sparse=True))]


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None) -> Any:
    """The slices of ``a`` along ``axis`` where the 1-D ``condition`` is true (``size`` pads or
    truncates to a static length).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.compress(jnp.array([True, False, True]), jnp.array([1, 2, 3])).tolist()
        [1, 3]
    """
    check_arraylike("compress", condition, a, fill_value, extended=True)
    if out is not None:
        raise NotImplementedError("The 'out' argument to fluxion.numpy.compress is not "
                                  "supported.")
    cond = ensure_array(condition)
    cond = cond if cond.dtype == np.bool_ else lax.ne(cond, _zero(cond))
    if cond.ndim != 1:
        raise ValueError("condition must be a 1D array")
    arr = ensure_array(a)
    if axis is None:
        axis, arr = 0, ravel(arr)
    else:
        arr = moveaxis(arr, axis, 0)
    n = arr.shape[0]
    extra = lax.slice_in_dim(cond, min(n, cond.shape[0]), cond.shape[0], axis=0)
    cond = lax.slice_in_dim(cond, 0, min(n, cond.shape[0]), axis=0)
    arr = lax.slice_in_dim(arr, 0, cond.shape[0], axis=0)
    if size is None:
        if extra.shape[0] and bool(np.any(concrete_array(extra, "compress", "condition"))):
            raise ValueError("condition contains entries that are out of bounds")
        host = concrete_array(cond, "compress", "condition (or pass a static size)")
        res = arr[asarray(np.nonzero(host)[0].astype(np.int32))]
    elif not 0 <= size <= arr.shape[0]:
        raise ValueError("size must be positive and not greater than the size of the array "
                         f"axis; got size={size} for a.shape[axis]={arr.shape[0]}")
    else:
        mask = lax.broadcast_in_dim(cond, arr.shape, (0,))
        filled = lax.select(mask, arr, lax.broadcast_in_dim(
            lax.convert_element_type(fill_value, arr.dtype), arr.shape, ()))
        order = argsort(cond, stable=True, descending=True)
        res = lax.slice_in_dim(filled[order], 0, size, axis=0)
    return moveaxis(res, 0, axis)


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    """The elements of the flattened ``arr`` where the flattened ``condition`` is true.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.extract(jnp.array([1, 0, 1]), jnp.array([4, 5, 6])).tolist()
        [4, 6]
    """
    check_arraylike("extract", condition, arr, fill_value, extended=True)
    return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """Elementwise the choice of the first true condition (``default`` where none is).

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = jnp.arange(4)
        >>> jnp.select([x < 1, x > 2], [x, x * 10], -1).tolist()
        [0, -1, -1, 30]
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    check_arraylike("select", *condlist, *choicelist, default, extended=True)
    conds = [ensure_array(c) for c in condlist]
    chs = promote_dtypes(ensure_array(default), *[ensure_array(c) for c in choicelist])
    conds = broadcast_arrays(False, *conds)
    conds = [c if c.dtype == np.bool_ else lax.ne(c, _zero(c)) for c in conds]
    idx = argmax(stack(conds), axis=0)
    parts = broadcast_arrays(idx, *chs)
    return lax.select_n(parts[0], *parts[1:])


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """Evaluate ``funclist[i]`` (functions or constants) where ``condlist[i]`` holds (the last
    true condition wins; an extra function is the default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = jnp.array([-1.0, 2.0])
        >>> jnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * 10]).tolist()
        [1.0, 20.0]
    """
    check_arraylike("piecewise", x)
    xa = ensure_array(x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funclist = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    conds = asarray(condlist, dtype=bool) if not isinstance(condlist, (list, tuple)) else stack(
        [broadcast_to(asarray(c, dtype=bool), xa.shape) for c in condlist])
    if conds.ndim == xa.ndim and nc == 1 and conds.shape == xa.shape:
        conds = lax.expand_dims(conds, (0,))
    conds = broadcast_to(conds, (nc,) + xa.shape)
    falses = lax.broadcast_in_dim(False, (1,) + xa.shape, ())
    # The last true condition wins: argmax over the reversed stack.
    allc = lax.concatenate([falses, conds], 0)
    rev = lax.rev(allc, (0,))
    idx = lax.sub(lax.convert_element_type(nc, dtypes.default_int_dtype()),
                  argmax(rev, axis=0))
    anyc = lax.reduce_or(conds, (0,))
    idx = lax.select(anyc, idx, lax.broadcast_in_dim(
        lax.convert_element_type(0, idx.dtype), idx.shape, ()))
    outs = []
    for f in funclist:
        v = f(xa, *args, **kw) if callable(f) else f
        outs.append(lax.convert_element_type(broadcast_to(asarray(v), xa.shape), xa.dtype))
    return lax.select_n(lax.convert_element_type(idx, np.int32), *outs)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """A copy of ``arr`` with the positions where ``mask`` is true filled by ``vals`` (cycled);
    pass ``inplace=False``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.place(jnp.zeros(3), jnp.array([1, 0, 1]), jnp.array([7.0]), inplace=False).tolist()
        [7.0, 0.0, 7.0]
    """
    check_arraylike("place", arr, mask, vals)
    if inplace:
        raise ValueError("fluxion.numpy.place cannot modify arrays in-place, because arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    data, m, v = ensure_array(arr), ensure_array(mask), ravel(ensure_array(vals))
    if data.size != m.size:
        raise ValueError("place: arr and mask must be the same size")
    if not v.size:
        raise ValueError("Cannot place values from an empty array")
    if not data.size:
        return data
    idx = nonzero(ravel(m), size=m.size, fill_value=m.size)[0]
    v = _tile_to_size(v, idx.shape[0])
    return reshape(ravel(data).at[idx].set(v, mode="drop"), data.shape)


def _tile_to_size(v: Any, n: int) -> Any:
    reps = -(-n // v.shape[0])
    return lax.slice_in_dim(tile(v, reps), 0, n, axis=0) if reps > 1 or v.shape[0] != n else v


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """A copy of ``a`` with its main diagonal set to ``val``; pass ``inplace=False``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fill_diagonal(jnp.zeros((2, 2)), 1.0, inplace=False).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    if inplace:
        raise NotImplementedError("Fluxion arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    check_arraylike("fill_diagonal", a, val)
    arr, v = ensure_array(a), ensure_array(val)
    if arr.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if arr.ndim > 2 and not all(n == arr.shape[0] for n in arr.shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    n = min(arr.shape)
    idx = diag_indices(n, arr.ndim)
    return arr.at[idx].set(v if v.ndim == 0 else _tile_to_size(ravel(v), n))


def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Any:
    """A copy of ``a`` with the flat positions ``ind`` set to ``v`` (cycled); pass
    ``inplace=False``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.put(jnp.zeros(3), jnp.array([0, 2]), 5.0, inplace=False).tolist()
        [5.0, 0.0, 5.0]
    """
    if inplace:
        raise ValueError("fluxion.numpy.put cannot modify arrays in-place, because arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    check_arraylike("put", a, ind, v, extended=True)
    arr, idx, vv = ensure_array(a), ravel(ensure_array(ind)), ravel(ensure_array(v))
    if not arr.size or not idx.size or not vv.size:
        return arr
    vv = _tile_to_size(vv, idx.shape[0])
    if mode is None:
        smode = "drop"
    elif mode == "clip":
        idx = uf.clip(idx, 0, arr.size - 1)
        smode = "promise_in_bounds"
    elif mode == "wrap":
        idx = uf.remainder(idx, arr.size)
        smode = "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to fluxion.numpy.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode}")
    return arr.at[unravel_index(idx, arr.shape)].set(vv, mode=smode)


_ = (atleast_1d, Callable)
