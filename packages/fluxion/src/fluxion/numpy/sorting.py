"""Sorting and searching: sort, argsort, lexsort, partition, argpartition, sort_complex,
searchsorted, digitize.

Floats sort in lax.sort's total order (``-0.0 == 0.0``, NaNs last); indices are the default
integer dtype, as in JAX.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.argsort(jnp.array([3, 1, 2])).tolist()
    [1, 2, 0]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._gather_util import take_along_last
from fluxion.numpy._util import canonical_axis, check_arraylike, ensure_array, promote_dtypes
from fluxion.numpy.shape import ravel, swapaxes, where

__all__ = ["sort", "argsort", "lexsort", "partition", "argpartition", "sort_complex",
           "searchsorted", "digitize"]


def _index_dtype(n: int) -> np.dtype:
    return dtypes.default_int_dtype() if n < 2**31 else np.dtype(np.int64)


def sort(a: Any, axis: int | None = -1, *, kind: None = None, order: None = None,
         stable: bool = True, descending: bool = False) -> Any:
    """A sorted copy of ``a`` along ``axis`` (flattened when None).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.sort(jnp.array([3, 1, 2])).tolist()
        [1, 2, 3]
    """
    check_arraylike("sort", a)
    if kind is not None:
        raise TypeError("'kind' argument to sort is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError("'order' argument to sort is not supported.")
    arr = ensure_array(a)
    if axis is None:
        arr, axis = ravel(arr), 0
    dim = canonical_axis(axis, arr.ndim, "sort")
    out = lax.sort(arr, dimension=dim, is_stable=stable)
    return lax.rev(out, (dim,)) if descending else out


def argsort(a: Any, axis: int | None = -1, *, kind: None = None, order: None = None,
            stable: bool = True, descending: bool = False, dtype: Any = None) -> Any:
    """Indices that sort ``a`` along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.argsort(jnp.array([3, 1, 2]), descending=True).tolist()
        [0, 2, 1]
    """
    check_arraylike("argsort", a)
    if kind is not None:
        raise TypeError("'kind' argument to argsort is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError("'order' argument to argsort is not supported.")
    arr = ensure_array(a)
    if axis is None:
        arr, axis = ravel(arr), 0
    dim = canonical_axis(axis, arr.ndim, "argsort")
    idt = (dtypes.check_and_canonicalize_user_dtype(dtype, "argsort") if dtype is not None
           else _index_dtype(arr.shape[dim]))
    iota = lax.broadcasted_iota(idt, arr.shape, dim)
    if descending and stable:
        arr, iota = lax.rev(arr, (dim,)), lax.rev(iota, (dim,))
    _, idx = lax.sort_key_val(arr, iota, dimension=dim, is_stable=stable)
    return lax.rev(idx, (dim,)) if descending else idx


def lexsort(keys: Sequence[Any], axis: int = -1) -> Any:
    """Indices sorting by several keys; the last key is the primary one.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.lexsort([jnp.array([1, 0, 1]), jnp.array([0, 0, 1])]).tolist()
        [1, 0, 2]
    """
    key_arrays = tuple(ensure_array(k) for k in keys)
    check_arraylike("lexsort", *key_arrays)
    if not key_arrays:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if len({k.shape for k in key_arrays}) > 1:
        raise ValueError("all keys need to be the same shape")
    if key_arrays[0].ndim == 0:
        return lax.convert_element_type(0, dtypes.default_int_dtype())
    dim = canonical_axis(axis, key_arrays[0].ndim, "lexsort")
    iota = lax.broadcasted_iota(_index_dtype(key_arrays[0].shape[dim]), key_arrays[0].shape, dim)
    return lax.sort((*key_arrays[::-1], iota), dimension=dim,
                            num_keys=len(key_arrays))[-1]


def _neg_for_partition(arr: Any) -> Any:
    if dtypes.isdtype(arr.dtype, "unsigned integer"):
        one = lax.convert_element_type(1, arr.dtype)
        return lax.neg(lax.add(arr, one))
    return lax.neg(arr)


def partition(a: Any, kth: int, axis: int = -1) -> Any:
    """A copy of ``a`` with the ``kth`` element in sorted position, smaller ones before it and
    larger ones after (each side in JAX's order).

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.partition(jnp.array([3, 1, 2, 0]), 1)[1])
        1
    """
    check_arraylike("partition", a)
    arr = ensure_array(a)
    if arr.dtype.kind == "c":
        raise NotImplementedError("fluxion.numpy.partition for complex dtype is not implemented.")
    ax = canonical_axis(axis, arr.ndim, "partition")
    k = canonical_axis(kth, arr.shape[ax], "partition")
    arr = swapaxes(arr, ax, -1)
    bottom = lax.neg(lax.top_k(_neg_for_partition(arr), k + 1)[0])
    if dtypes.isdtype(arr.dtype, "unsigned integer"):
        bottom = lax.sub(bottom, lax.convert_element_type(1, arr.dtype))
    top = lax.top_k(arr, arr.shape[-1] - k - 1)[0]
    out = lax.concatenate([bottom, top], arr.ndim - 1)
    return swapaxes(out, -1, ax)


def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    """Indices that would :func:`partition` ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.argpartition(jnp.array([3, 1, 2, 0]), 1)[1])
        1
    """
    check_arraylike("argpartition", a)
    arr = ensure_array(a)
    if arr.dtype.kind == "c":
        raise NotImplementedError("fluxion.numpy.argpartition for complex dtype is not "
                                  "implemented.")
    ax = canonical_axis(axis, arr.ndim, "argpartition")
    k = canonical_axis(kth, arr.shape[ax], "argpartition")
    arr = swapaxes(arr, ax, -1)
    bottom_ind = lax.top_k(_neg_for_partition(arr), k + 1)[1]
    # The rest: the positions not in bottom_ind, found as the top of a 0/1 proxy.
    n = arr.shape[-1]
    shp = bottom_ind.shape + (n,)
    nd = bottom_ind.ndim
    hit = lax.eq(lax.broadcast_in_dim(bottom_ind, shp, tuple(range(nd))),
                 lax.broadcasted_iota(bottom_ind.dtype, shp, nd))
    taken = lax.reduce_or(hit, (nd - 1,))
    f32 = np.dtype(np.float32)
    proxy = lax.select(taken, lax.broadcast_in_dim(lax.convert_element_type(0, f32), arr.shape, ()),
                       lax.broadcast_in_dim(lax.convert_element_type(1, f32), arr.shape, ()))
    top_ind = lax.top_k(proxy, n - k - 1)[1]
    out = lax.concatenate([bottom_ind, top_ind], arr.ndim - 1)
    return swapaxes(out, -1, ax)


def sort_complex(a: Any) -> Any:
    """``a`` sorted along its last axis (real part first, then imaginary), as complex.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.sort_complex(jnp.array([2, 1])).dtype
        dtype('complex64')
    """
    check_arraylike("sort_complex", a)
    arr = lax.sort(ensure_array(a), dimension=-1)
    return lax.convert_element_type(arr, dtypes.canonicalize_dtype(dtypes.to_complex_dtype(
        arr.dtype)))


def _canon_for_sort(x: Any) -> Any:
    zero = lax.convert_element_type(0, x.dtype)
    x = lax.select(lax.eq(x, zero), lax.broadcast_in_dim(zero, x.shape, ()), x)
    nan = lax.convert_element_type(np.nan, x.dtype)
    return lax.select(lax.ne(x, x), lax.broadcast_in_dim(nan, x.shape, ()), x)


def _keys(x: Any) -> list[Any]:
    if x.dtype.kind == "c":
        return [_canon_for_sort(lax.real(x)), _canon_for_sort(lax.imag(x))]
    if dtypes.issubdtype(x.dtype, np.floating):
        return [_canon_for_sort(x)]
    return [x]


def _total_lt(x: Any, y: Any, or_equal: bool) -> Any:
    # lax.sort's order: NaN is the largest value and equals itself.
    def lt(a: Any, b: Any) -> Any:
        if dtypes.issubdtype(a.dtype, np.floating):
            an, bn = lax.ne(a, a), lax.ne(b, b)
            return lax.bitwise_or(lax.lt(a, b), lax.bitwise_and(lax.bitwise_not(an), bn))
        return lax.lt(a, b)

    def eq(a: Any, b: Any) -> Any:
        if dtypes.issubdtype(a.dtype, np.floating):
            return lax.bitwise_or(lax.eq(a, b), lax.bitwise_and(lax.ne(a, a), lax.ne(b, b)))
        return lax.eq(a, b)

    xs, ys = _keys(x), _keys(y)
    p = None
    for xk, yk in zip(xs[::-1], ys[::-1]):
        if p is None:
            p = lax.bitwise_or(lt(xk, yk), eq(xk, yk)) if or_equal else lt(xk, yk)
        else:
            p = lax.bitwise_or(lt(xk, yk), lax.bitwise_and(eq(xk, yk), p))
    return p


@one_program_static(static_argnames=("side", "method"))
def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
    """Indices where the elements of ``v`` would be inserted into sorted 1-D ``a`` (int32).

    Every ``method`` gives the same result for a sorted ``a``. 'scan' (the default) and
    'scan_unrolled' are JAX's binary search: ``ceil(log2(len(a) + 1))`` steps over all of
    ``v`` at once, as a loop or unrolled; 'sort' sorts ``a`` and ``v`` together (a stable
    sort of ``len(a) + v.size`` elements); 'compare_all' compares every pair (an
    ``[len(a), *v.shape]`` intermediate).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.searchsorted(jnp.array([1, 2, 3]), jnp.array([2, 5])).tolist()
        [1, 3]
    """
    if sorter is None:
        check_arraylike("searchsorted", a, v)
    else:
        check_arraylike("searchsorted", a, v, sorter)
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of "
                         "['left', 'right'].")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"method={method!r} not recognized; expected one of 'scan', "
                         "'scan_unrolled', 'sort', 'compare_all'")
    a, v = ensure_array(a), ensure_array(v)
    if a.ndim != 1:
        raise ValueError("a should be 1-dimensional")
    a, v = promote_dtypes(a, v)
    if sorter is not None:
        a = take_along_last(a, ensure_array(sorter))
    n = a.shape[0]
    out_dt = np.dtype(np.int32) if n < 2**31 else np.dtype(np.int64)
    if method in ("scan", "scan_unrolled") and n > 0:
        return _binary_search(a, v, side, out_dt, unrolled=method == "scan_unrolled")
    if method == "sort":
        return _search_by_sort(a, v, side, out_dt)
    shp = (n,) + v.shape
    ab = lax.broadcast_in_dim(a, shp, (0,))
    vb = lax.broadcast_in_dim(v, shp, tuple(range(1, v.ndim + 1)))
    cmp = _total_lt(ab, vb, or_equal=(side == "right"))
    return lax.reduce_sum(lax.convert_element_type(cmp, out_dt), (0,))


def _search_by_sort(a: Any, v: Any, side: str, out_dt: np.dtype) -> Any:
    # One stable sort of a and the queries together: a query's position there counts the queries
    # before it (its position among the queries alone) plus the elements of ``a`` before it.
    # Putting the queries first makes ties with ``a`` sort them first ('left': a < v); putting
    # them last, after ('right': a <= v). O((n + m) log(n + m)) instead of n * m comparisons.
    n, m = a.shape[0], int(np.prod(v.shape, dtype=np.int64))
    wdt = np.dtype(np.int32) if n + m < np.iinfo(np.int32).max else np.dtype(np.int64)
    q = lax.reshape(v, (m,))

    def positions(x: Any) -> Any:  # the inverse of x's stable sorting permutation
        order = lax.convert_element_type(argsort(x), wdt)
        iota = lax.iota(wdt, x.shape[0])
        return lax.full((x.shape[0],), 0, wdt).at[order].set(iota)

    if side == "left":
        in_both = lax.slice_in_dim(positions(lax.concatenate([q, a], 0)), 0, m)
    else:
        in_both = lax.slice_in_dim(positions(lax.concatenate([a, q], 0)), n, n + m)
    found = lax.sub(in_both, positions(q))
    return lax.convert_element_type(lax.reshape(found, v.shape), out_dt)


def _binary_search(a: Any, v: Any, side: str, out_dt: np.dtype, unrolled: bool) -> Any:
    # JAX's search: (low, high] brackets the answer from (0, n]; each step halves it, going
    # left where v <= a[mid] ('left') or v < a[mid] ('right') in lax.sort's total order.
    n = a.shape[0]
    levels = int(np.ceil(np.log2(n + 1)))
    size = int(np.prod(v.shape, dtype=np.int64))
    udt = np.dtype(np.uint64) if out_dt == np.dtype(np.int64) else np.dtype(np.uint32)

    def step(_: Any, bounds: tuple) -> tuple:
        low, high = bounds
        mid = lax.add(low, lax.div(lax.sub(high, low), lax.full_like(low, 2)))
        at_mid = lax.reshape(take_along_last(a, lax.reshape(mid, (size,))), v.shape)
        left = _total_lt(v, at_mid, or_equal=(side == "left"))
        return lax.select(left, low, mid), lax.select(left, mid, high)

    bounds = (lax.full(v.shape, 0, udt), lax.full(v.shape, n, udt))
    if unrolled:
        for i in range(levels):
            bounds = step(i, bounds)
    else:
        bounds = lax.fori_loop(0, levels, step, bounds)
    return lax.convert_element_type(bounds[1], out_dt)


@one_program_static(static_argnames=("right", "method"))
def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    """Indices of the bins (increasing or decreasing ``bins``) that the values fall into.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.digitize(jnp.array([0.5, 1.5]), jnp.array([0.0, 1.0, 2.0])).tolist()
        [1, 2]
    """
    check_arraylike("digitize", x, bins)
    x, b = ensure_array(x), ensure_array(bins)
    if b.ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    if b.shape[0] == 0:
        return lax.broadcast_in_dim(lax.convert_element_type(0, np.int32), x.shape, ())
    side = "right" if not right else "left"
    kw = {} if method is None else {"method": method}
    n = b.shape[0]
    inc = lax.ge(lax.slice(b, (n - 1,), (n,)), lax.slice(b, (0,), (1,)))
    fwd = searchsorted(b, x, side=side, **kw)
    bwd = lax.sub(lax.convert_element_type(n, fwd.dtype), searchsorted(lax.rev(b, (0,)), x,
                                                                       side=side, **kw))
    return where(lax.reshape(inc, ()), fwd, bwd)
