"""Data-dependent indices and set operations: nonzero/argwhere/flatnonzero, unique and the
``*1d`` set functions, isin, and index helpers (ix_, unravel_index, ravel_multi_index,
diag/tril/triu/mask indices).

Results whose size depends on the data need concrete inputs, or a static ``size=`` (padded with
``fill_value``) under jit, as in JAX.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.unique(jnp.array([3, 1, 3])).tolist()
    [1, 3]
"""

from __future__ import annotations

import math
import operator
from collections import namedtuple
from typing import Any, Callable, Sequence

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.errors import ConcretizationTypeError, user_source_line
from fluxion.core.trace import Tracer
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._util import (
    canonical_axis,
    check_arraylike,
    concrete_array,
    ensure_array,
    is_arraylike,
    promote_dtypes,
)
from fluxion.numpy.creation import asarray, ones
from fluxion.numpy.cumulative import cumsum
from fluxion.numpy.shape import (
    atleast_1d,
    broadcast_to,
    concatenate,
    moveaxis,
    ravel,
    reshape,
    stack,
    where,
)
from fluxion.numpy.sorting import argsort, lexsort, sort

__all__ = [
    "nonzero", "argwhere", "flatnonzero", "unique", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "union1d", "intersect1d", "setdiff1d", "setxor1d",
    "isin", "ix_", "unravel_index", "ravel_multi_index", "diag_indices", "diag_indices_from",
    "tril_indices", "tril_indices_from", "triu_indices", "triu_indices_from", "mask_indices",
    "s_", "index_exp",
]

# NumPy's index-expression builders: ``s_[1:3]`` is ``slice(1, 3)``; ``index_exp[1:3]`` the tuple.
s_ = np.s_
index_exp = np.index_exp

# The array API's result tuples of the unique_* functions.
_UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
_UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
_UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple:
    """Indices of the non-zero elements, one array per dimension (``size``: a static length,
    padded with ``fill_value``, default 0).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.nonzero(jnp.array([0, 3, 0, 4]))[0].tolist()
        [1, 3]
    """
    check_arraylike("nonzero", a)
    arr = ensure_array(a)
    if arr.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "jnp.atleast_1d(scalar).nonzero() instead.")
    mask = arr if arr.dtype == np.bool_ else lax.ne(arr, lax.convert_element_type(0, arr.dtype))
    idt = dtypes.default_int_dtype()
    if size is None:
        host = concrete_array(mask, "nonzero", "the input (pass a static size= under jit)")
        size = int(host.sum())
    size = operator.index(size)
    if arr.size == 0 or size == 0:
        return tuple(lax.broadcast_in_dim(lax.convert_element_type(0, idt), (size,), ())
                     for _ in arr.shape)
    flat = ravel(mask)
    order = argsort(flat, stable=True, descending=True)
    n = flat.shape[0]
    if size <= n:
        flat_idx = lax.slice(order, (0,), (size,))
    else:
        pad = lax.broadcast_in_dim(lax.convert_element_type(0, order.dtype), (size - n,), ())
        flat_idx = lax.concatenate([order, pad], 0)
    count = lax.reduce_sum(lax.convert_element_type(flat, idt), (0,))
    valid = lax.lt(lax.iota(idt, size), count)
    flat_idx = lax.select(valid, lax.convert_element_type(flat_idx, idt),
                          lax.broadcast_in_dim(lax.convert_element_type(0, idt), (size,), ()))
    strides = np.cumprod(arr.shape[::-1])[::-1] // np.asarray(arr.shape)
    out = []
    for st, d in zip(strides, arr.shape):
        out.append(lax.rem(lax.div(flat_idx, lax.convert_element_type(int(st), idt)),
                           lax.convert_element_type(int(d), idt)))
    if fill_value is not None:
        fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * arr.ndim
        if len(fills) != arr.ndim or any(np.shape(v) != () for v in fills):
            raise ValueError(f"fill_value must be a scalar or a tuple of length {arr.ndim}; got "
                             f"{fill_value}")
        out = [where(valid, o, f) for o, f in zip(out, fills)]
    return tuple(out)


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Indices of the non-zero elements of the flattened array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.flatnonzero(jnp.array([[0, 1], [1, 0]])).tolist()
        [1, 2]
    """
    return nonzero(ravel(ensure_array(a)), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Indices of the non-zero elements, one row per element.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.argwhere(jnp.array([[0, 1], [1, 0]])).tolist()
        [[0, 1], [1, 0]]
    """
    check_arraylike("argwhere", a)
    arr = ensure_array(a)
    res = stack(nonzero(atleast_1d(arr), size=size, fill_value=fill_value), axis=1)
    if arr.ndim == 0:
        return reshape(lax.slice_in_dim(res, 0, 0, axis=1), (res.shape[0], 0))
    return res


def _unique_sorted_mask(ar: Any, axis: int, equal_nan: bool) -> tuple[Any, Any, Any]:
    aux = moveaxis(ar, axis, 0)
    if aux.dtype.kind == "c":
        aux = where(uf.isnan(aux), lax.convert_element_type(np.nan, aux.dtype), aux)
    size, *rest = aux.shape
    inner = int(np.prod(rest, dtype=np.int64))
    idt = dtypes.default_int_dtype()
    if inner == 0:
        size = 1
        perm = lax.broadcast_in_dim(lax.convert_element_type(0, idt), (1,), ())
    else:
        keys = lax.transpose(reshape(aux, (size, inner)), (1, 0))
        perm = lexsort([keys[i] for i in range(inner)][::-1])
    aux = aux[perm]
    if aux.size:
        a1 = lax.slice_in_dim(aux, 1, aux.shape[0], axis=0)
        a0 = lax.slice_in_dim(aux, 0, aux.shape[0] - 1, axis=0)
        neq = lax.ne(a1, a0)
        if dtypes.issubdtype(aux.dtype, np.inexact) and equal_nan:
            neq = lax.bitwise_and(neq, lax.bitwise_not(lax.bitwise_and(uf.isnan(a1),
                                                                       uf.isnan(a0))))
        if neq.ndim > 1:
            neq = lax.reduce_or(neq, tuple(range(1, neq.ndim)))
        mask = lax.concatenate([lax.broadcast_in_dim(True, (1,), ()), neq], 0)
    else:
        mask = lax.broadcast_in_dim(False, (size,), ())
    return aux, mask, perm


def _unique(ar: Any, axis: int, return_index: bool = False, return_inverse: bool = False,
            return_counts: bool = False, equal_nan: bool = True, size: int | None = None,
            fill_value: Any = None) -> Any:
    idt = dtypes.default_int_dtype()
    if ar.shape[axis] == 0 and size and fill_value is None:
        raise ValueError("fluxion.numpy.unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    aux, mask, perm = _unique_sorted_mask(ar, axis, equal_nan)
    if size is None:
        ind = asarray(np.nonzero(concrete_array(mask, "unique", "the input"))[0].astype(idt))
    else:
        ind = nonzero(mask, size=size)[0]
    result = aux[ind] if aux.size else aux
    if size is not None and fill_value is not None:
        if not is_arraylike(fill_value):  # JAX converts it with lax.asarray: no lists
            raise TypeError(f"asarray: expected ArrayLike, got {fill_value!r} of type "
                            f"{type(fill_value)}.")
        fv = lax.convert_element_type(ensure_array(fill_value), result.dtype)
        # an array fill_value broadcasts against one sub-array (the rows along the axis moved
        # to the front), as in JAX: unique(x, axis=0, size=n, fill_value=x[0]) pads with rows
        if result.shape[0]:
            nuniq = lax.reduce_sum(lax.convert_element_type(mask, idt), (0,))
            valid = lax.lt(lax.iota(idt, size), nuniq)
            valid = lax.broadcast_in_dim(valid, (size,) + (1,) * (result.ndim - 1), (0,))
            result = where(valid, result, fv)
        else:
            result = broadcast_to(fv, (size,) + result.shape[1:])
    result = moveaxis(result, 0, axis)
    ret = (result,)
    if return_index:
        ret += (perm[ind] if aux.size else perm,)
    if return_inverse:
        if aux.size:
            imask = uf.subtract(cumsum(mask), 1)
            inv = lax.broadcast_in_dim(lax.convert_element_type(0, imask.dtype), mask.shape, ())
            inv = inv.at[perm].set(imask)
        else:
            inv = lax.broadcast_in_dim(lax.convert_element_type(0, idt), (ar.shape[axis],), ())
        ret += (inv,)
    if return_counts:
        if aux.size:
            if size is None:
                idx = concatenate([nonzero(mask)[0], asarray(np.array([mask.shape[0]], idt))])
            else:
                idx = nonzero(mask, size=size + 1)[0]
                tail = lax.slice_in_dim(idx, 1, size + 1, axis=0)
                tail = where(tail, tail, mask.shape[0])
                idx = lax.concatenate([lax.slice_in_dim(idx, 0, 1, axis=0), tail], 0)
            from fluxion.numpy.calculus import diff  # reason: loaded on first use (import time)

            ret += (diff(idx),)
        elif ar.shape[axis]:
            ret += (lax.broadcast_in_dim(lax.convert_element_type(ar.shape[axis], idt), (1,), ()),)
        else:
            ret += (lax.broadcast_in_dim(lax.convert_element_type(0, idt), (0,), ()),)
    return ret[0] if len(ret) == 1 else ret


_UNIQUE_SIZE_HINT = ("To make jnp.unique() compatible with JIT and other transforms, you can "
                     "specify a concrete value for the size argument, which will determine the "
                     "output size.")


def _concrete_or_error(x: Any, where: str) -> None:
    """JAX's ConcretizationTypeError when ``x`` has no value while tracing (checked before the
    other arguments, as JAX does)."""
    if isinstance(x, Tracer):
        try:
            x._interp.to_concrete(x)
        except Exception:
            raise ConcretizationTypeError(
                "Abstract tracer value encountered where concrete value is expected: traced "
                f"array with shape {np.dtype(x.dtype).name}[{','.join(map(str, x.shape))}]\n{where}{_UNIQUE_SIZE_HINT} (at "
                f"{user_source_line()})") from None


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: Any = None, sorted: bool = True) -> Any:
    """The sorted unique elements (or sub-arrays along ``axis``), optionally with first
    indices, inverse indices and counts. Needs concrete input unless ``size`` is given.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.unique(jnp.array([2, 1, 2]), return_counts=True)]
        [[1, 2], [1, 2]]
    """
    check_arraylike("unique", ar)
    arr = ensure_array(ar)
    if size is None:
        _concrete_or_error(arr, "The error arose for the first argument of jnp.unique(). ")
    else:
        size = operator.index(size)
    shp = arr.shape
    if axis is None:
        arr, ax = ravel(arr), 0
    else:
        ax = canonical_axis(axis, arr.ndim, "unique")
    res = _unique(arr, ax, return_index, return_inverse, return_counts, equal_nan=equal_nan,
                  size=size, fill_value=fill_value)
    if return_inverse and axis is None:
        k = 2 if return_index else 1
        res = (*res[:k], reshape(res[k], shp), *res[k + 1:])
    return res


def unique_all(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Array-API ``unique_all``: a namedtuple ``(values, indices, inverse_indices, counts)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.unique_all(jnp.array([2, 1, 2])).counts.tolist()
        [1, 2]
    """
    v, i, inv, c = unique(x, return_index=True, return_inverse=True, return_counts=True,
                          equal_nan=False, size=size, fill_value=fill_value)
    return _UniqueAllResult(v, i, inv, c)


def unique_counts(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Array-API ``unique_counts``: ``(values, counts)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.unique_counts(jnp.array([2, 1, 2])).values.tolist()
        [1, 2]
    """
    v, c = unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
    return _UniqueCountsResult(v, c)


def unique_inverse(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Array-API ``unique_inverse``: ``(values, inverse_indices)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.unique_inverse(jnp.array([2, 1, 2])).inverse_indices.tolist()
        [1, 0, 1]
    """
    v, inv = unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
    return _UniqueInverseResult(v, inv)


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """Array-API ``unique_values``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.unique_values(jnp.array([2, 1, 2])).tolist()
        [1, 2]
    """
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted union of two arrays.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.union1d(jnp.array([1, 3]), jnp.array([2, 3])).tolist()
        [1, 2, 3]
    """
    check_arraylike("union1d", ar1, ar2)
    return unique(concatenate((ensure_array(ar1), ensure_array(ar2)), axis=None), size=size,
                  fill_value=fill_value)


def _in1d(ar1: Any, ar2: Any, invert: bool) -> Any:
    a1, a2 = promote_dtypes(ensure_array(ar1), ensure_array(ar2))
    a1, a2 = ravel(a1), ravel(a2)
    if a1.size == 0 or a2.size == 0:
        return lax.broadcast_in_dim(bool(invert), a1.shape, ())
    shp = (a1.shape[0], a2.shape[0])
    b1 = lax.broadcast_in_dim(a1, shp, (0,))
    b2 = lax.broadcast_in_dim(a2, shp, (1,))
    if invert:
        return lax.reduce_and(lax.ne(b1, b2), (1,))
    return lax.reduce_or(lax.eq(b1, b2), (1,))


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
    """Elementwise membership of ``element`` in ``test_elements``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isin(jnp.array([1, 2, 3]), jnp.array([2])).tolist()
        [False, True, False]
    """
    check_arraylike("isin", element, test_elements, extended=True)  # keys: equality of keys
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                         "'binary_search', 'sort', and 'auto'")
    e = ensure_array(element)
    return reshape(_in1d(e, test_elements, invert), e.shape)


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
    """The sorted unique values of ``ar1`` not in ``ar2``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.setdiff1d(jnp.array([1, 2, 3]), jnp.array([2])).tolist()
        [1, 3]
    """
    check_arraylike("setdiff1d", ar1, ar2)
    a1, a2 = ravel(ensure_array(ar1)), ravel(ensure_array(ar2))
    if size is not None:
        size = operator.index(size)
    fv = lax.convert_element_type(0 if fill_value is None else fill_value, a1.dtype,
                                  weak_type=a1.weak_type)
    if a1.size == 0:
        return lax.broadcast_in_dim(fv, (size or 0,), ())
    if not assume_unique:
        a1 = unique(a1, size=size and a1.size)
    mask = _in1d(a1, a2, invert=True)
    if size is None:
        return a1[asarray(np.nonzero(concrete_array(mask, "setdiff1d", "the input"))[0].astype(np.int32))]
    idt = dtypes.default_int_dtype()
    if not assume_unique:
        first = lax.slice(a1, (0,), (1,))
        n_unique = uf.subtract(a1.size + 1, lax.reduce_sum(lax.convert_element_type(
            lax.eq(a1, lax.broadcast_in_dim(lax.reshape(first, ()), a1.shape, ())), idt), (0,)))
        mask = where(lax.lt(lax.iota(idt, a1.size), n_unique), mask, False)
    count = lax.reduce_sum(lax.convert_element_type(mask, idt), (0,))
    picked = a1[nonzero(mask, size=size)[0]]
    return where(lax.lt(lax.iota(idt, size), count), picked, fv)


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted unique values in both arrays (optionally with their first indices).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.intersect1d(jnp.array([1, 2, 3]), jnp.array([3, 2, 5])).tolist()
        [2, 3]
    """
    check_arraylike("intersect1d", ar1, ar2)
    if size is not None:
        raise NotImplementedError("fluxion.numpy.intersect1d: size= is not supported yet")
    a1, a2 = promote_dtypes(ravel(ensure_array(ar1)), ravel(ensure_array(ar2)))
    ind1 = ind2 = None
    if not assume_unique:
        if return_indices:
            a1, ind1 = unique(a1, return_index=True)
            a2, ind2 = unique(a2, return_index=True)
        else:
            a1, a2 = unique(a1), unique(a2)
    arr = concatenate((a1, a2))
    n = arr.shape[0]
    idt = dtypes.default_int_dtype()
    if return_indices:
        aux, sidx = lax.sort_key_val(arr, lax.iota(idt, n))
    else:
        aux, sidx = lax.sort(arr), None
    if n == 0:
        out = aux
        return (out, aux.astype(idt), aux.astype(idt)) if return_indices else out
    mask = lax.eq(lax.slice(aux, (1,), (n,)), lax.slice(aux, (0,), (n - 1,)))
    sel = asarray(np.nonzero(concrete_array(mask, "intersect1d", "the input"))[0].astype(np.int32))
    res = lax.slice(aux, (0,), (n - 1,))[sel]
    if not return_indices:
        return res
    i1 = lax.slice(sidx, (0,), (n - 1,))[sel]
    i2 = uf.subtract(lax.slice(sidx, (1,), (n,))[sel], a1.shape[0])
    if not assume_unique:
        i1, i2 = ind1[i1], ind2[i2]
    return res, i1, i2


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
    """The sorted values in exactly one of the two arrays.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.setxor1d(jnp.array([1, 2]), jnp.array([2, 3])).tolist()
        [1, 3]
    """
    check_arraylike("setxor1d", ar1, ar2)
    if size is not None:
        raise NotImplementedError("fluxion.numpy.setxor1d: size= is not supported yet")
    a1, a2 = promote_dtypes(ravel(ensure_array(ar1)), ravel(ensure_array(ar2)))
    if not assume_unique:
        a1, a2 = unique(a1), unique(a2)
    aux = concatenate((a1, a2))
    if aux.size == 0:
        return aux
    aux = sort(aux)
    n = aux.shape[0]
    ne = lax.ne(lax.slice(aux, (1,), (n,)), lax.slice(aux, (0,), (n - 1,)))
    t = lax.broadcast_in_dim(True, (1,), ())
    flag = lax.concatenate([t, ne, t], 0)
    keep = lax.bitwise_and(lax.slice(flag, (1,), (n + 1,)), lax.slice(flag, (0,), (n,)))
    return aux[asarray(np.nonzero(concrete_array(keep, "setxor1d", "the input"))[0].astype(np.int32))]


def ix_(*args: Any) -> tuple:
    """Open-mesh index arrays from 1-D sequences, for cross-product indexing.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [i.shape for i in jnp.ix_(jnp.array([0, 1]), jnp.array([2, 3, 4]))]
        [(2, 1), (1, 3)]
    """
    check_arraylike("ix_", *args, extended=True)
    n = len(args)
    out = []
    for i, a in enumerate(args):
        a = ensure_array(a)
        if a.ndim != 1:
            raise ValueError(f"Arguments to fluxion.numpy.ix_ must be 1-dimensional, got shape "
                             f"{a.shape}")
        if a.dtype == np.bool_:
            raise NotImplementedError("Boolean arguments to fluxion.numpy.ix_ are not "
                                      "implemented")
        shape = [1] * n
        shape[i] = a.shape[0]
        if a.size == 0:
            out.append(lax.broadcast_in_dim(lax.convert_element_type(0, dtypes.canonicalize_dtype(
                np.intp)), tuple(shape), ()))
        else:
            out.append(lax.broadcast_in_dim(a, tuple(shape), (i,)))
    return tuple(out)


def unravel_index(indices: Any, shape: Any) -> tuple:
    """Convert flat indices into a tuple of coordinate arrays for ``shape`` (out-of-range
    indices are clipped).

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.unravel_index(jnp.array([5]), (2, 3))]
        [[1], [2]]
    """
    check_arraylike("unravel_index", indices)
    idx = ensure_array(indices)
    try:
        shp = list(shape)
    except TypeError:
        shp = [shape]
    if any(np.ndim(s) != 0 for s in shp):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    outs: list[Any] = [0] * len(shp)
    for i in reversed(range(len(shp))):
        idx, outs[i] = uf.divmod(idx, shp[i])
    oob_pos = uf.greater(idx, 0)
    oob_neg = (asarray(False) if dtypes.issubdtype(idx.dtype, np.unsignedinteger)
               else uf.less(idx, -1))
    return tuple(where(oob_pos, uf.subtract(s, 1), where(oob_neg, 0, o))
                 for s, o in zip(shp, outs))


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None) -> Any:
    """Flat indices from a tuple of coordinate arrays for an array of shape ``dims`` (``mode``:
    ``"raise"``, ``"wrap"``, ``"clip"`` or ``"ignore"`` out-of-bound coordinates; ``dtype``: an
    integer dtype for the result, large enough for ``prod(dims) - 1``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.ravel_multi_index((jnp.array([1]), jnp.array([2])), (2, 3)).tolist()
        [5]
    """
    if len(multi_index) != len(dims):
        raise ValueError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
    dims = tuple(operator.index(d) for d in dims)
    check_arraylike("ravel_multi_index", *multi_index)
    mi = [ensure_array(i) for i in multi_index]
    if dtype is None:
        dt = dtypes.result_type(int, *mi)
    else:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "ravel_multi_index")
    if not dtypes.issubdtype(dt, np.integer):
        raise ValueError(f"dtype={dt!r} is not an integer type.")
    if math.prod(dims) - 1 > np.iinfo(dt).max:
        raise ValueError(
            f"jnp.ravel_multi_index: dtype={dt!r} not large enough to hold flattened index for "
            f"dims={dims}. Use the dtype argument to pass a suitable dtype (e.g. "
            "dtype=np.min_scalar_type(prod(dims))).")
    for i in mi:
        if not dtypes.issubdtype(i.dtype, np.integer):
            raise TypeError("only int indices permitted")
    if mode == "raise":
        for i, d in zip(mi, dims):
            h = concrete_array(i, "ravel_multi_index", "indices (with mode='raise'; use 'wrap' or 'clip')")
            if np.any((h < 0) | (h >= d)):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        mi = [uf.clip(i, 0, d - 1) for i, d in zip(mi, dims)]
    elif mode == "wrap":
        mi = [uf.remainder(i, d) for i, d in zip(mi, dims)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'.")
    if order == "F":
        strides = np.cumprod((1,) + dims[:-1])
    elif order == "C":
        strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    res = lax.convert_element_type(0, dt)
    for i, s in zip(mi, strides):
        res = uf.add(res, uf.multiply(lax.convert_element_type(i, dt), int(s)))
    return res


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """Indices of the main diagonal of an ``ndim``-dimensional array of side ``n``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.diag_indices(2)]
        [[0, 1], [0, 1]]
    """
    n, ndim = operator.index(n), operator.index(ndim)
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    return (lax.iota(dtypes.default_int_dtype(), n),) * ndim


def diag_indices_from(arr: Any) -> tuple:
    """:func:`diag_indices` for an array with equal dimensions.

    Example:
        >>> import fluxion.numpy as jnp
        >>> len(jnp.diag_indices_from(jnp.zeros((2, 2))))
        2
    """
    a = ensure_array(arr)
    if a.ndim < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(a.shape[0], a.ndim)


def _tri_indices(name: str, n: int, k: int, m: int | None, lower: bool) -> tuple:
    n = operator.index(n)
    k = operator.index(k)
    m = n if m is None else operator.index(m)
    r, c = np.tril_indices(n, k, m) if lower else np.triu_indices(n, k, m)
    idt = dtypes.default_int_dtype()
    return asarray(r.astype(idt)), asarray(c.astype(idt))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """Row and column indices of the lower triangle of an ``n`` x ``m`` array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.tril_indices(2)]
        [[0, 1, 1], [0, 0, 1]]
    """
    return _tri_indices("tril_indices", n, k, m, True)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """Row and column indices of the upper triangle of an ``n`` x ``m`` array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.triu_indices(2)]
        [[0, 0, 1], [0, 1, 1]]
    """
    return _tri_indices("triu_indices", n, k, m, False)


def tril_indices_from(arr: Any, k: int = 0) -> tuple:
    """:func:`tril_indices` for the shape of a 2-D array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> len(jnp.tril_indices_from(jnp.zeros((2, 3)))[0])
        3
    """
    shp = arr.shape if hasattr(arr, "shape") else np.shape(arr)
    if len(shp) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return tril_indices(shp[0], k=k, m=shp[1])


def triu_indices_from(arr: Any, k: int = 0) -> tuple:
    """:func:`triu_indices` for the shape of a 2-D array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> len(jnp.triu_indices_from(jnp.zeros((2, 3)))[0])
        5
    """
    shp = arr.shape if hasattr(arr, "shape") else np.shape(arr)
    if len(shp) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return triu_indices(shp[0], k=k, m=shp[1])


def mask_indices(n: int, mask_func: Callable[..., Any], k: int = 0, *,
                 size: int | None = None) -> tuple:
    """Indices where ``mask_func(ones((n, n)), k)`` is non-zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.mask_indices(2, jnp.triu)]
        [[0, 0, 1], [0, 1, 1]]
    """
    i, j = nonzero(mask_func(ones((n, n)), k), size=size)
    return i, j
