"""Order statistics: ``quantile``, ``percentile``, ``median`` and their NaN-ignoring forms.

Example:
    >>> import fluxion.numpy as jnp
    >>> float(jnp.median(jnp.array([3.0, 1.0, 2.0, 4.0])))
    2.5
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.lax import sorting as lax_sorting
from fluxion.numpy import reductions as red
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._gather_util import take_along_last
from fluxion.numpy._util import (
    canonical_axes,
    check_arraylike,
    const_like,
    ensure_array,
    promote_dtypes_inexact,
)
from fluxion.numpy.shape import moveaxis, reshape, where

__all__ = ["quantile", "nanquantile", "percentile", "nanpercentile", "median", "nanmedian"]


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _quantile(name: str, a: Any, q: Any, axis: Any, method: str, keepdims: bool,
              squash_nans: bool, weights: Any) -> Any:
    if method not in _METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' "
                         "or 'inverted_cdf'")
    if weights is not None or method == "inverted_cdf":
        raise NotImplementedError(f"{name}: method='inverted_cdf' and weights are not "
                                  "supported yet in Fluxion")
    a, q = ensure_array(a), ensure_array(q)
    (a,) = promote_dtypes_inexact(a)
    if a.dtype.kind == "c":
        raise ValueError("quantile does not support complex input, as the operation is poorly "
                         "defined.")
    if q.ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
    nd = a.ndim
    axes = canonical_axes(axis, nd, name)
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape))
    rest = tuple(i for i in range(nd) if i not in axes)
    a = lax.transpose(a, rest + axes)
    batch = tuple(a.shape[:len(rest)])
    n = math.prod(a.shape[len(rest):])
    a = reshape(a, batch + (n,))
    last = a.ndim - 1
    qdt = q.dtype
    qv = q if q.ndim == 1 else lax.reshape(q, (1,))
    k = qv.shape[0]
    if squash_nans:
        a = where(uf.isnan(a), np.nan, a)
        a = lax_sorting.sort(a, dimension=last)
        counts = red.sum(lax.bitwise_not(uf.isnan(a)), axis=last, dtype=qdt)  # batch
        cb = lax.broadcast_in_dim(counts, batch + (k,), tuple(range(len(batch))))
        qb = lax.broadcast_in_dim(qv, batch + (k,), (len(batch),))
        qq = lax.mul(qb, lax.sub(cb, const_like(qb, 1)))
        low, high = lax.floor(qq), lax.ceil(qq)
        hw = lax.sub(qq, low)
        lw = lax.sub(const_like(hw, 1), hw)
        cm1 = lax.sub(cb, const_like(cb, 1))
        low = lax.max(const_like(low, 0), lax.min(low, cm1))
        high = lax.max(const_like(high, 0), lax.min(high, cm1))
    else:
        anynan = red.any(uf.isnan(a), axis=last, keepdims=True)
        a = where(anynan, np.nan, a)
        a = lax_sorting.sort(a, dimension=last)
        nn = lax.convert_element_type(n, qdt)
        qq = lax.mul(qv, lax.sub(nn, const_like(nn, 1)))
        low, high = lax.floor(qq), lax.ceil(qq)
        hw = lax.sub(qq, low)
        lw = lax.sub(const_like(hw, 1), hw)
        nm1 = lax.sub(nn, const_like(nn, 1))
        low = lax.clamp(const_like(low, 0), low, nm1)
        high = lax.clamp(const_like(high, 0), high, nm1)
        lw = lax.broadcast_in_dim(lw, batch + (k,), (len(batch),))
        hw = lax.broadcast_in_dim(hw, batch + (k,), (len(batch),))
    idt = dtypes.default_int_dtype()
    low_v = take_along_last(a, lax.convert_element_type(low, idt))
    high_v = take_along_last(a, lax.convert_element_type(high, idt))
    if method == "linear":
        res = lax.add(lax.mul(lax.convert_element_type(low_v, qdt), lw),
                      lax.mul(lax.convert_element_type(high_v, qdt), hw))
    elif method == "lower":
        res = low_v
    elif method == "higher":
        res = high_v
    elif method == "nearest":
        res = lax.select(lax.le(hw, const_like(hw, 0.5)), low_v, high_v)
    else:
        res = lax.mul(lax.add(low_v, high_v), const_like(low_v, 0.5))
    # res: batch + (k,) -> q_shape + result shape
    res = moveaxis(res, -1, 0)
    out_shape = keep_shape if keepdims else batch
    res = lax.reshape(res, (k,) + out_shape)
    if q.ndim == 0:
        res = lax.reshape(res, out_shape)
    return res


@one_program_static(static_argnames=("axis", "out", "overwrite_input", "method", "keepdims"))
def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    """The ``q``-th quantiles (``q`` in [0, 1], scalar or 1-D) along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.quantile(jnp.array([1.0, 2.0, 3.0, 4.0]), 0.5))
        2.5
    """
    check_arraylike("quantile", a, q)
    if overwrite_input or out is not None:
        raise ValueError("fluxion.numpy.quantile does not support overwrite_input=True or "
                         "out != None")
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


@one_program_static(static_argnames=("axis", "out", "overwrite_input", "method", "keepdims"))
def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                *, weights: Any = None) -> Any:
    """Quantiles ignoring NaNs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanquantile(jnp.array([1.0, jnp.nan, 3.0]), 0.5))
        2.0
    """
    check_arraylike("nanquantile", a, q)
    if overwrite_input or out is not None:
        raise ValueError("fluxion.numpy.nanquantile does not support overwrite_input=True or "
                         "out != None")
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


@one_program_static(static_argnames=("axis", "out", "overwrite_input", "method", "keepdims"))
def percentile(a: Any, q: Any, axis: Any = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights: Any = None) -> Any:
    """The ``q``-th percentiles (``q`` in [0, 100]).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.percentile(jnp.array([1.0, 2.0, 3.0]), 50))
        2.0
    """
    check_arraylike("percentile", a, q)
    (q,) = promote_dtypes_inexact(ensure_array(q))
    return quantile(a, uf.divide(q, 100), axis=axis, out=out, overwrite_input=overwrite_input,
                    method=method, keepdims=keepdims, weights=weights)


@one_program_static(static_argnames=("axis", "out", "overwrite_input", "method", "keepdims"))
def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
                  *, weights: Any = None) -> Any:
    """Percentiles ignoring NaNs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanpercentile(jnp.array([1.0, jnp.nan, 3.0]), 50))
        2.0
    """
    check_arraylike("nanpercentile", a, q)
    (q,) = promote_dtypes_inexact(ensure_array(q))
    return nanquantile(a, uf.divide(q, 100), axis=axis, out=out,
                       overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                       weights=weights)


@one_program_static(static_argnames=("axis", "out", "overwrite_input", "keepdims"))
def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """Median along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.median(jnp.array([3.0, 1.0, 2.0, 4.0])))
        2.5
    """
    check_arraylike("median", a)
    return quantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                    keepdims=keepdims, method="midpoint")


@one_program_static(static_argnames=("axis", "out", "overwrite_input", "keepdims"))
def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    """Median ignoring NaNs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanmedian(jnp.array([3.0, jnp.nan, 1.0])))
        2.0
    """
    check_arraylike("nanmedian", a)
    return nanquantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                       keepdims=keepdims, method="midpoint")
