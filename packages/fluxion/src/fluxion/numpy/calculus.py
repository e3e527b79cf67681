"""Finite differences and integration: ``diff``, ``ediff1d``, ``gradient``, ``trapezoid`` and
phase ``unwrap``.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.gradient(jnp.array([1.0, 2.0, 4.0])).tolist()
    [1.0, 1.5, 2.0]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import reductions as red
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import (
    canonical_axis,
    check_arraylike,
    ensure_array,
    promote_dtypes,
    promote_dtypes_inexact,
)
from fluxion.numpy.creation import asarray
from fluxion.numpy.cumulative import cumsum
from fluxion.numpy.shape import broadcast_to, concatenate, moveaxis, ravel, reshape, where

__all__ = ["diff", "ediff1d", "gradient", "trapezoid", "unwrap"]


def _sl(a: Any, start: int | None, stop: int | None, axis: int) -> Any:
    return lax.slice_in_dim(a, start, stop, axis=axis)


@one_program_static(static_argnames=("n", "axis"))
def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th discrete difference along ``axis`` (``!=`` for bool).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.diff(jnp.array([1, 4, 9])).tolist()
        [3, 5]
    """
    check_arraylike("diff", a)
    arr = ensure_array(a)
    n = operator.index(n)
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if arr.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    ax = canonical_axis(axis, arr.ndim, "diff")
    parts = []
    for extra in (prepend,):
        if extra is not None:
            e = ensure_array(extra)
            if e.ndim == 0:
                shp = list(arr.shape)
                shp[ax] = 1
                e = broadcast_to(e, tuple(shp))
            parts.append(e)
    parts.append(arr)
    if append is not None:
        e = ensure_array(append)
        if e.ndim == 0:
            shp = list(arr.shape)
            shp[ax] = 1
            e = broadcast_to(e, tuple(shp))
        parts.append(e)
    if len(parts) > 1:
        arr = concatenate(parts, ax)
    for _ in range(n):
        m = arr.shape[ax]
        hi, lo = _sl(arr, min(1, m), m, ax), _sl(arr, 0, max(m - 1, 0), ax)  # m = 0: empty
        arr = uf.not_equal(hi, lo) if arr.dtype == np.bool_ else uf.subtract(hi, lo)
    return arr


@one_program_static(static_argnames=())
def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences of consecutive elements of the flattened array, with optional ends.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.ediff1d(jnp.array([1, 4, 9]), to_begin=0).tolist()
        [0, 3, 5]
    """
    check_arraylike("ediff1d", ary)
    arr = ravel(ensure_array(ary))
    m = arr.shape[0]
    res = lax.sub(_sl(arr, 1, m, 0), _sl(arr, 0, max(m - 1, 0), 0)) if m else arr
    if to_begin is not None:
        res = concatenate((ravel(lax.convert_element_type(ensure_array(to_begin), arr.dtype)),
                           res))
    if to_end is not None:
        res = concatenate((res, ravel(lax.convert_element_type(ensure_array(to_end),
                                                               arr.dtype))))
    return res


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int | None = None) -> Any:
    """The gradient of ``f`` by central differences inside and one-sided at the edges.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.gradient(jnp.array([1.0, 2.0, 4.0])).tolist()
        [1.0, 1.5, 2.0]
    """
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to fluxion.numpy.gradient is not "
                                  "supported.")
    check_arraylike("gradient", f, *varargs)
    a, *spacing = promote_dtypes_inexact(*(ensure_array(v) for v in (f, *varargs)))

    def along(a: Any, h: Any, ax: int) -> Any:
        n = a.shape[ax]
        s = lambda lo, hi: _sl(a, lo, hi, ax)
        upper = uf.subtract(s(1, 2), s(0, 1))
        lower = uf.subtract(s(n - 1, n), s(n - 2, n - 1))
        if h.ndim == 0:
            inner = uf.divide(uf.multiply(uf.subtract(s(2, n), s(0, n - 2)), 0.5), h)
            lower = uf.divide(lower, h)
            upper = uf.divide(upper, h)
        elif h.ndim == 1:
            if h.shape[0] != n:
                raise ValueError("Spacing arrays must have the same length as the dimension "
                                 "along which the gradient is calculated.")
            hs = [1] * a.ndim
            hs[ax] = n
            h = reshape(h, tuple(hs))
            sx = lambda lo, hi: _sl(h, lo, hi, ax)
            upper = uf.divide(upper, uf.subtract(sx(1, 2), sx(0, 1)))
            lower = uf.divide(lower, uf.subtract(sx(n - 1, n), sx(n - 2, n - 1)))
            dx1 = uf.subtract(sx(1, n - 1), sx(0, n - 2))
            dx2 = uf.subtract(sx(2, n), sx(1, n - 1))
            ca = uf.divide(uf.negative(dx2), uf.multiply(dx1, uf.add(dx1, dx2)))
            cb = uf.divide(uf.subtract(dx2, dx1), uf.multiply(dx1, dx2))
            cc = uf.divide(dx1, uf.multiply(dx2, uf.add(dx1, dx2)))
            inner = uf.add(uf.add(uf.multiply(ca, s(0, n - 2)), uf.multiply(cb, s(1, n - 1))),
                           uf.multiply(cc, s(2, n)))
        else:
            raise ValueError("Spacing arrays must be 1D arrays or scalars.")
        return concatenate((upper, inner, lower), axis=ax)

    if axis is None:
        axes = tuple(range(a.ndim))
    else:
        axes = tuple(canonical_axis(i, a.ndim, "gradient") for i in (
            axis if isinstance(axis, (tuple, list)) else (axis,)))
    if not axes:
        return []
    if min(s for i, s in enumerate(a.shape) if i in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "2 elements are required.")
    if not spacing:
        dx = [lax.convert_element_type(1.0, a.dtype, weak_type=True)] * len(axes)
    elif len(spacing) == 1:
        dx = list(spacing) * len(axes)
    elif len(spacing) == len(axes):
        dx = list(spacing)
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
    out = [along(a, h, ax) for ax, h in zip(axes, dx)]
    return out[0] if len(axes) == 1 else out


@one_program_static(static_argnames=("axis",))
def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """Integral of ``y`` along ``axis`` by the trapezoidal rule.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.trapezoid(jnp.array([1.0, 2.0, 3.0])))
        4.0
    """
    if x is None:
        check_arraylike("trapezoid", y)
        (ya,) = promote_dtypes_inexact(ensure_array(y))
        dxa = asarray(dx)
        if dxa.ndim > 0:
            dxa = lax.expand_dims(dxa, tuple(range(ya.ndim - dxa.ndim)))
            dxa = moveaxis(dxa, axis, -1)
    else:
        check_arraylike("trapezoid", y, x)
        ya, xa = promote_dtypes_inexact(ensure_array(y), ensure_array(x))
        dxa = diff(xa) if xa.ndim == 1 else moveaxis(diff(xa, axis=axis), axis, -1)
    ya = moveaxis(ya, axis, -1)
    n = ya.shape[-1]
    last = ya.ndim - 1
    if dxa.ndim == 0 or dxa.shape[-1] == 1:
        dxr = dxa if dxa.ndim == 0 else lax.squeeze(_sl(dxa, 0, 1, dxa.ndim - 1), (dxa.ndim - 1,))
        ends = uf.add(lax.squeeze(_sl(ya, 0, 1, last), (last,)),
                      lax.squeeze(_sl(ya, n - 1, n, last), (last,)))
        return uf.multiply(dxr, uf.subtract(red.sum(ya, -1), uf.multiply(0.5, ends)))
    return uf.multiply(0.5, red.sum(uf.multiply(dxa, uf.add(_sl(ya, 1, n, last),
                                                             _sl(ya, 0, n - 1, last))), -1))


@one_program_static(static_argnames=("axis",))
def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    """Unwrap phase angles by replacing jumps larger than ``discont`` with their
    ``period``-complement.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [round(v, 3) for v in jnp.unwrap(jnp.array([0.0, 6.0])).tolist()]
        [0.0, -0.283]
    """
    check_arraylike("unwrap", p, extended=True)  # key arrays: promotion's ValueError
    p, period = promote_dtypes(ensure_array(p), ensure_array(period) if not isinstance(
        period, (int, float)) else period)
    if p.dtype.kind == "c":
        raise ValueError("fluxion.numpy.unwrap does not support complex inputs.")
    ax = canonical_axis(axis, p.ndim, "unwrap")
    if p.shape[ax] == 0:
        return p
    if discont is None:
        discont = uf.divide(period, 2)
    interval = (uf.floor_divide(period, 2) if dtypes.issubdtype(p.dtype, np.integer)
                else uf.divide(period, 2))
    dd = diff(p, axis=ax)
    ddmod = uf.subtract(uf.remainder(uf.add(dd, interval), period), interval)
    ddmod = where(uf.logical_and(uf.equal(ddmod, uf.negative(interval)), uf.greater(dd, 0)),
                   interval, ddmod)
    corr = where(uf.less(uf.abs(dd), discont), 0, uf.subtract(ddmod, dd))
    n = p.shape[ax]
    return concatenate((_sl(p, 0, 1, ax), uf.add(_sl(p, 1, n, ax), cumsum(corr, axis=ax))), ax)
