"""Statistics and cumulative functions: NaN-ignoring reductions, cumsum/cumprod, quantiles,
average, cov/corrcoef, histograms, bincount, differences, gradient, interp, convolutions and
trapezoid integration.

Example:
    >>> import fluxion.numpy as jnp
    >>> float(jnp.nanmean(jnp.array([1.0, jnp.nan, 3.0])))
    2.0
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.lax import cumulative as lax_cum
from fluxion.numpy import reductions as red
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._util import (
    canonical_axes,
    canonical_axis,
    check_arraylike,
    ensure_array,
    promote_args_inexact,
    promote_dtypes,
    promote_dtypes_inexact,
)

__all__ = [
    "nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanvar", "nanstd", "nanargmax",
    "nanargmin", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum",
    "nancumprod", "median", "nanmedian", "percentile", "nanpercentile", "quantile",
    "nanquantile", "average", "cov", "corrcoef", "histogram", "histogram_bin_edges",
    "histogram2d", "histogramdd", "bincount", "diff", "ediff1d", "gradient", "interp",
    "convolve", "correlate", "trapezoid", "unwrap",
]


def _where(c: Any, a: Any, b: Any) -> Any:
    from fluxion.numpy.shape import where  # noqa: PLC0415
    return where(c, a, b)


def _c(x: Any, v: Any) -> Any:
    return lax.convert_element_type(v, x.dtype, weak_type=getattr(x, "weak_type", False))


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to fluxion.numpy.{name} is not supported.")


# ------------------------------------------------------------------------------------------
# NaN-ignoring reductions
# ------------------------------------------------------------------------------------------

def _init_val(a: Any, v: float) -> Any:
    dt = a.dtype
    if dt == np.bool_:
        return np.array(v > 0, dtype=dt)
    if np.isinf(v) and dtypes.issubdtype(dt, np.floating) and not dtypes.supports_inf(dt):
        info = dtypes.finfo(dt)
        v = info.min if v < 0 else info.max
    return np.array(v, dtype=dt)


def _nan_reduction(a: Any, name: str, fn: Callable, init: float, nan_if_all_nan: bool,
                   **kw: Any) -> Any:
    check_arraylike(name, a)
    a = ensure_array(a)
    if not dtypes.issubdtype(a.dtype, np.inexact):
        return fn(a, **kw)
    filled = _where(uf.isnan(a), lax.convert_element_type(_init_val(a, init), a.dtype,
                                                          weak_type=a.weak_type), a)
    out = fn(filled, **kw)
    if nan_if_all_nan:
        allnan = red.all(uf.isnan(a), axis=kw.get("axis"), keepdims=kw.get("keepdims", False))
        return _where(allnan, _c(a, np.nan), out)
    return out


def nanmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Minimum ignoring NaNs (NaN where every element is NaN).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanmin(jnp.array([jnp.nan, 2.0, 1.0])))
        1.0
    """
    _no_out("nanmin", out)
    return _nan_reduction(a, "nanmin", red.min, np.inf, initial is None, axis=axis,
                          keepdims=keepdims, initial=initial, where=where)


def nanmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Maximum ignoring NaNs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanmax(jnp.array([jnp.nan, 2.0, 1.0])))
        2.0
    """
    _no_out("nanmax", out)
    return _nan_reduction(a, "nanmax", red.max, -np.inf, initial is None, axis=axis,
                          keepdims=keepdims, initial=initial, where=where)


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Sum treating NaNs as zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nansum(jnp.array([jnp.nan, 2.0, 1.0])))
        3.0
    """
    _no_out("nansum", out)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "nansum")
    return _nan_reduction(a, "nansum", red.sum, 0, False, axis=axis, dtype=dtype,
                          keepdims=keepdims, initial=initial, where=where)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """Product treating NaNs as one.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanprod(jnp.array([jnp.nan, 2.0, 3.0])))
        6.0
    """
    _no_out("nanprod", out)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "nanprod")
    return _nan_reduction(a, "nanprod", red.prod, 1, False, axis=axis, dtype=dtype,
                          keepdims=keepdims, initial=initial, where=where)


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, where: Any = None) -> Any:
    """Mean of the non-NaN elements.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanmean(jnp.array([jnp.nan, 2.0, 4.0])))
        3.0
    """
    _no_out("nanmean", out)
    check_arraylike("nanmean", a)
    a = ensure_array(a)
    if a.dtype == np.bool_ or dtypes.issubdtype(a.dtype, np.integer):
        return red.mean(a, axis, dtype, keepdims=keepdims, where=where)
    dt = (dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(a.dtype)) if dtype is None
          else dtypes.check_and_canonicalize_user_dtype(dtype, "mean"))
    mask = lax.bitwise_not(uf.isnan(a))
    norm = red.sum(mask, axis=axis, dtype=dt, keepdims=keepdims, where=where)
    return lax.div(nansum(a, axis, dtype=dt, keepdims=keepdims, where=where), norm)


def _var_types(a_dt: np.dtype, dtype: Any) -> tuple[np.dtype, np.dtype]:
    if dtype is not None:
        dt = np.dtype(dtype)
        if dt.kind != "c" and a_dt.kind == "c":
            raise ValueError("fluxion.numpy.var does not support real dtype parameters for "
                             "complex inputs")
        comp = dt
    elif not dtypes.issubdtype(a_dt, np.inexact):
        dt = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(a_dt))
        comp = dt
    else:
        dt = np.dtype(np.finfo(a_dt).dtype) if a_dt.kind == "c" else a_dt
        comp = a_dt
    if comp == np.float16 or comp == dtypes.dtype("bfloat16"):
        comp = np.dtype(np.float32)
    return comp, dt


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """Variance of the non-NaN elements.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanvar(jnp.array([jnp.nan, 1.0, 3.0])))
        1.0
    """
    _no_out("nanvar", out)
    check_arraylike("nanvar", a)
    a = ensure_array(a)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "nanvar")
    comp, dt = _var_types(a.dtype, dtype)
    a = lax.convert_element_type(a, comp, weak_type=a.weak_type)
    a_mean = (nanmean(a, axis, dtype=comp, keepdims=True, where=where) if mean is None
              else lax.convert_element_type(ensure_array(mean), comp))
    centered = _where(uf.isnan(a), 0, lax.sub(a, a_mean))
    if centered.dtype.kind == "c":
        centered = lax.real(lax.mul(centered, lax.conj(centered)))
    else:
        centered = lax.mul(centered, centered)
    normalizer = red.sum(lax.bitwise_not(uf.isnan(a)), axis=axis, keepdims=keepdims,
                         where=where)
    normalizer = uf.subtract(normalizer, ddof)
    bad = lax.le(normalizer, _c(normalizer, 0))
    result = red.sum(centered, axis, keepdims=keepdims, where=where)
    result = _where(bad, np.nan, result)
    divisor = _where(bad, 1, normalizer)
    result = lax.div(result, lax.convert_element_type(divisor, result.dtype))
    return lax.convert_element_type(result, dt, weak_type=result.weak_type)


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """Standard deviation of the non-NaN elements.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanstd(jnp.array([jnp.nan, 1.0, 3.0])))
        1.0
    """
    _no_out("nanstd", out)
    return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                           mean=mean))


def _nanarg(name: str, a: Any, axis: Any, out: Any, keepdims: bool, is_max: bool) -> Any:
    _no_out(name, out)
    check_arraylike(name, a)
    a = ensure_array(a)
    fn = red.argmax if is_max else red.argmin
    axis = None if axis is None else operator.index(axis)
    if not dtypes.issubdtype(a.dtype, np.inexact):
        return fn(a, axis=axis, keepdims=keepdims)
    mask = uf.isnan(a)
    filled = _where(mask, -np.inf if is_max else np.inf, a)
    res = fn(filled, axis=axis, keepdims=keepdims)
    return _where(red.all(mask, axis=axis, keepdims=keepdims), -1, res)


def nanargmax(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None
              ) -> Any:
    """Index of the maximum ignoring NaNs (-1 where all are NaN).

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.nanargmax(jnp.array([jnp.nan, 2.0, 1.0])))
        1
    """
    return _nanarg("nanargmax", a, axis, out, bool(keepdims), True)


def nanargmin(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None
              ) -> Any:
    """Index of the minimum ignoring NaNs (-1 where all are NaN).

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.nanargmin(jnp.array([jnp.nan, 2.0, 1.0])))
        2
    """
    return _nanarg("nanargmin", a, axis, out, bool(keepdims), False)


# ------------------------------------------------------------------------------------------
# Cumulative reductions
# ------------------------------------------------------------------------------------------

def _promote_int(dt: np.dtype) -> np.dtype:
    if dt == np.bool_:
        return dtypes.default_int_dtype()
    if dtypes.issubdtype(dt, np.unsignedinteger):
        du = dtypes.default_uint_dtype()
        return du if np.iinfo(dt).bits < np.iinfo(du).bits else dt
    if dtypes.issubdtype(dt, np.integer):
        di = dtypes.default_int_dtype()
        return di if np.iinfo(dt).bits < np.iinfo(di).bits else dt
    return dt


def _cumulative(name: str, fn: Callable, a: Any, axis: Any, dtype: Any, out: Any = None,
                promote_integers: bool = False, fill_nan: bool = False, fill_value: Any = 0) -> Any:
    _no_out(name, out)
    check_arraylike(name, a)
    a = ensure_array(a)
    if axis is None or a.ndim == 0:
        a = lax.reshape(a, (a.size,))
    if axis is None:
        axis = 0
    ax = canonical_axis(axis, a.ndim, name)
    if fill_nan and dtypes.issubdtype(a.dtype, np.inexact):
        a = _where(uf.isnan(a), _c(a, fill_value), a)
    if dtype is None:
        res_t = _promote_int(a.dtype) if promote_integers or a.dtype == np.bool_ else a.dtype
        comp_t = res_t
    elif np.dtype(dtype) == np.bool_:
        res_t = np.dtype(np.bool_)
        if a.dtype != res_t:
            a = lax.ne(a, _c(a, 0))
        comp_t = _promote_int(res_t)
    else:
        res_t = dtypes.check_and_canonicalize_user_dtype(dtype, name)
        comp_t = res_t
    a = lax.convert_element_type(a, comp_t, weak_type=a.weak_type and dtype is None)
    return lax.convert_element_type(fn(a, ax), res_t, weak_type=a.weak_type and dtype is None)


def cumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative sum along ``axis`` (of the flattened array when None; bool sums as int).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cumsum(jnp.array([1, 2, 3])).tolist()
        [1, 3, 6]
    """
    return _cumulative("cumsum", lax_cum.cumsum, a, axis, dtype, out)


def cumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative product along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cumprod(jnp.array([1, 2, 3])).tolist()
        [1, 2, 6]
    """
    return _cumulative("cumprod", lax_cum.cumprod, a, axis, dtype, out)


def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative sum treating NaNs as zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.nancumsum(jnp.array([1.0, jnp.nan, 3.0])).tolist()
        [1.0, 1.0, 4.0]
    """
    return _cumulative("nancumsum", lax_cum.cumsum, a, axis, dtype, out, fill_nan=True,
                       fill_value=0)


def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative product treating NaNs as one.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.nancumprod(jnp.array([2.0, jnp.nan, 3.0])).tolist()
        [2.0, 2.0, 6.0]
    """
    return _cumulative("nancumprod", lax_cum.cumprod, a, axis, dtype, out, fill_nan=True,
                       fill_value=1)


def _cumulative_api(name: str, fn: Callable, ident: int, x: Any, axis: Any, dtype: Any,
                    include_initial: bool) -> Any:
    check_arraylike(name, x)
    x = ensure_array(x)
    if x.ndim == 0:
        raise ValueError(f"{name}: the input must be non-scalar to take a cumulative "
                         "reduction, however a scalar value or scalar array was given.")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: the input array has rank {x.ndim}, however axis was not "
                             "set to an explicit value. The axis argument is only optional for "
                             "one-dimensional arrays.")
        axis = 0
    ax = canonical_axis(axis, x.ndim, name)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, name)
    out = _cumulative(name, fn, x, ax, dtype, promote_integers=(name == "cumulative_sum"))
    if include_initial:
        shp = list(x.shape)
        shp[ax] = 1
        init = lax.broadcast_in_dim(lax.convert_element_type(ident, out.dtype), tuple(shp), ())
        out = lax.concatenate([init, out], ax)
    return out


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    """Array-API cumulative sum (``include_initial`` prepends a zero).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cumulative_sum(jnp.array([1, 2]), include_initial=True).tolist()
        [0, 1, 3]
    """
    return _cumulative_api("cumulative_sum", lax_cum.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """Array-API cumulative product (``include_initial`` prepends a one).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cumulative_prod(jnp.array([2, 3]), include_initial=True).tolist()
        [1, 2, 6]
    """
    return _cumulative_api("cumulative_prod", lax_cum.cumprod, 1, x, axis, dtype,
                           include_initial)


# ------------------------------------------------------------------------------------------
# Quantiles
# ------------------------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _quantile(name: str, a: Any, q: Any, axis: Any, method: str, keepdims: bool,
              squash_nans: bool, weights: Any) -> Any:
    from fluxion.numpy._gather_util import take_along_last  # noqa: PLC0415
    from fluxion.numpy.shape import moveaxis, reshape  # noqa: PLC0415
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
        a = _where(uf.isnan(a), np.nan, a)
        a = _sort(a, last)
        counts = red.sum(lax.bitwise_not(uf.isnan(a)), axis=last, dtype=qdt)  # batch
        cb = lax.broadcast_in_dim(counts, batch + (k,), tuple(range(len(batch))))
        qb = lax.broadcast_in_dim(qv, batch + (k,), (len(batch),))
        qq = lax.mul(qb, lax.sub(cb, _c(qb, 1)))
        low, high = lax.floor(qq), lax.ceil(qq)
        hw = lax.sub(qq, low)
        lw = lax.sub(_c(hw, 1), hw)
        cm1 = lax.sub(cb, _c(cb, 1))
        low = lax.max(_c(low, 0), lax.min(low, cm1))
        high = lax.max(_c(high, 0), lax.min(high, cm1))
    else:
        anynan = red.any(uf.isnan(a), axis=last, keepdims=True)
        a = _where(anynan, np.nan, a)
        a = _sort(a, last)
        nn = lax.convert_element_type(n, qdt)
        qq = lax.mul(qv, lax.sub(nn, _c(nn, 1)))
        low, high = lax.floor(qq), lax.ceil(qq)
        hw = lax.sub(qq, low)
        lw = lax.sub(_c(hw, 1), hw)
        nm1 = lax.sub(nn, _c(nn, 1))
        low = lax.clamp(_c(low, 0), low, nm1)
        high = lax.clamp(_c(high, 0), high, nm1)
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
        res = lax.select(lax.le(hw, _c(hw, 0.5)), low_v, high_v)
    else:
        res = lax.mul(lax.add(low_v, high_v), _c(low_v, 0.5))
    # res: batch + (k,) -> q_shape + result shape
    res = moveaxis(res, -1, 0)
    out_shape = keep_shape if keepdims else batch
    res = lax.reshape(res, (k,) + out_shape)
    if q.ndim == 0:
        res = lax.reshape(res, out_shape)
    return res


def _sort(a: Any, dim: int) -> Any:
    from fluxion.lax import sorting as lax_sorting  # noqa: PLC0415
    return lax_sorting.sort(a, dimension=dim)


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


# ------------------------------------------------------------------------------------------
# Averages, covariance
# ------------------------------------------------------------------------------------------

def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """Weighted average along ``axis`` (``returned`` also gives the sum of weights).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.average(jnp.array([1.0, 3.0]), weights=jnp.array([3.0, 1.0])))
        1.5
    """
    check_arraylike("average", a)
    a = ensure_array(a)
    axes = canonical_axes(axis, a.ndim, "average")
    if weights is None:
        (a,) = promote_dtypes_inexact(a)
        avg = red.mean(a, axis=axis, keepdims=keepdims)
        count = math.prod(a.shape[d] for d in axes)
        wsum = lax.convert_element_type(count, avg.dtype)
    else:
        check_arraylike("average", weights)
        a, w = promote_dtypes_inexact(a, ensure_array(weights))
        if a.shape != w.shape:
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            ax_tuple = axes if isinstance(axis, (tuple, list)) else (canonical_axis(
                axis, a.ndim, "average"),)
            if w.shape != tuple(a.shape[d] for d in ax_tuple):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            new_shape = tuple(d if i in ax_tuple else 1 for i, d in enumerate(a.shape))
            order = tuple(int(i) for i in np.argsort(ax_tuple))
            w = lax.reshape(lax.transpose(w, order) if order != tuple(range(len(order))) else w,
                            new_shape)
        wsum = red.sum(w, axis=axis, keepdims=keepdims)
        avg = uf.divide(red.sum(uf.multiply(a, w), axis=axis, keepdims=keepdims), wsum)
    if returned:
        if avg.shape != getattr(wsum, "shape", ()):
            from fluxion.numpy.shape import broadcast_to  # noqa: PLC0415
            wsum = broadcast_to(wsum, avg.shape)
        return avg, wsum
    return avg


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    """Covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cov(jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
    """
    from fluxion.numpy.creation import full  # noqa: PLC0415
    from fluxion.numpy.products import dot  # noqa: PLC0415
    from fluxion.numpy.shape import atleast_2d, concatenate, squeeze, transpose  # noqa: PLC0415
    if y is not None:
        m, y = promote_args_inexact("cov", m, y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        (m,) = promote_args_inexact("cov", m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
    X = atleast_2d(m)  # noqa: N806
    if not rowvar and m.ndim != 1:
        X = transpose(X)  # noqa: N806
    if X.shape[0] == 0:
        return lax.reshape(full((0,), 0.0), (0, 0))
    if y is not None:
        ya = atleast_2d(y)
        if not rowvar and ya.shape[0] != 1:
            ya = transpose(ya)
        X = concatenate((X, ya), axis=0)  # noqa: N806
    if X.shape[1] == 0:
        shp = () if X.shape[0] == 1 else (X.shape[0], X.shape[0])
        return full(shp, np.nan, dtype=X.dtype)
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        fw = ensure_array(fweights)
        if fw.ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if fw.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if not dtypes.issubdtype(fw.dtype, np.integer):
            raise TypeError("fweights must be integer.")
        w = uf.abs(fw)
    aw = None
    if aweights is not None:
        aw = ensure_array(aweights)
        if aw.ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if aw.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aw = uf.abs(aw)
        w = aw if w is None else uf.multiply(w, aw)
    if dtype is not None:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "cov")
        X = lax.convert_element_type(X, dt)  # noqa: N806
        w = lax.convert_element_type(w, dt) if w is not None else None
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = lax.slice(w_sum, (0,), (1,)) if getattr(w_sum, "ndim", 0) else w_sum
    w_sum = lax.reshape(w_sum, ()) if getattr(w_sum, "ndim", 0) else w_sum
    if w is None:
        f = X.shape[1] - ddof
    elif ddof == 0:
        f = w_sum
    elif aw is None:
        f = uf.subtract(w_sum, ddof)
    else:
        f = uf.subtract(w_sum, uf.divide(uf.multiply(ddof, red.sum(uf.multiply(w, aw))), w_sum))
    X = uf.subtract(X, lax.broadcast_in_dim(avg, avg.shape + (1,), (0,)))  # noqa: N806
    XT = transpose(X) if w is None else transpose(uf.multiply(X, lax.broadcast_in_dim(  # noqa: N806
        w, (1,) + w.shape, (1,))))
    return squeeze(uf.true_divide(dot(X, uf.conj(XT)), f))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    """Pearson correlation coefficients.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.corrcoef(jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
    """
    from fluxion.numpy import clip  # noqa: PLC0415
    from fluxion.numpy.construction import diag  # noqa: PLC0415
    check_arraylike("corrcoef", x)
    if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype}")
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return uf.divide(c, c)
    d = diag(c)
    sd = lax.convert_element_type(uf.sqrt(uf.real(d)), c.dtype)
    c = uf.divide(uf.divide(c, lax.broadcast_in_dim(sd, sd.shape + (1,), (0,))),
                  lax.broadcast_in_dim(sd, (1,) + sd.shape, (1,)))
    re = clip(uf.real(c), -1, 1)
    if c.dtype.kind == "c":
        return lax.complex(re, clip(uf.imag(c), -1, 1))
    return re


# ------------------------------------------------------------------------------------------
# Histograms and counting
# ------------------------------------------------------------------------------------------

def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None
             ) -> Any:
    """Number (or total weight) of occurrences of each non-negative integer in 1-D ``x``.

    Pass a static ``length`` under jit; values ``>= length`` are dropped, negatives count as 0.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.bincount(jnp.array([0, 1, 1, 3])).tolist()
        [1, 2, 0, 1]
    """
    from fluxion.numpy.creation import _concrete_scalar  # noqa: PLC0415
    check_arraylike("bincount", x)
    x = ensure_array(x)
    if x.dtype == np.bool_:
        x = lax.convert_element_type(x, np.int32)
    if not dtypes.issubdtype(x.dtype, np.integer):
        raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
    if x.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = operator.index(minlength)
    if length is None:
        xm = _concrete_scalar(red.max(x) if x.size else 0, "bincount",
                              "x (pass a static `length` argument)")
        length = max(minlength, x.size and int(max(0, xm)) + 1)
    else:
        length = operator.index(length)
    if weights is None:
        w = lax.broadcast_in_dim(lax.convert_element_type(1, dtypes.default_int_dtype()),
                                 x.shape, ())
    else:
        w = ensure_array(weights)
        if w.shape != x.shape:
            raise ValueError(f"bincount: weights must have the shape of x, got {w.shape} and "
                             f"{x.shape}")
    xc = lax.max(x, _c(x, 0))
    n = x.shape[0]
    shp = (n, length)
    hit = lax.eq(lax.broadcast_in_dim(xc, shp, (0,)), lax.broadcasted_iota(x.dtype, shp, 1))
    zero = lax.broadcast_in_dim(lax.convert_element_type(0, w.dtype), shp, ())
    if w.dtype == np.bool_:
        return lax.reduce_or(lax.bitwise_and(hit, lax.broadcast_in_dim(w, shp, (0,))), (0,))
    out = lax.reduce_sum(lax.select(hit, lax.broadcast_in_dim(w, shp, (0,)), zero), (0,))
    return lax.convert_element_type(out, w.dtype, weak_type=False)


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,  # noqa: A002
                        weights: Any = None) -> Any:
    """The edges of the bins :func:`histogram` would use.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.histogram_bin_edges(jnp.array([0.0, 1.0]), bins=2).tolist()
        [0.0, 0.5, 1.0]
    """
    from fluxion.numpy.creation import asarray, linspace  # noqa: PLC0415
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    check_arraylike("histogram_bin_edges", a, bins)
    arr = ensure_array(a)
    dt = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(arr.dtype))
    if np.ndim(bins) == 1:
        return asarray(bins, dtype=dt)
    nb = operator.index(bins)
    if range is None:
        range = [red.min(arr), red.max(arr)]  # noqa: A001
    from fluxion.numpy.shape import stack  # noqa: PLC0415
    rng = (stack([asarray(r, dtype=dt) for r in range]) if isinstance(range, (list, tuple))
           else asarray(range, dtype=dt))
    if rng.shape != (2,):
        raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
    lo, hi = lax.reshape(lax.slice(rng, (0,), (1,)), ()), lax.reshape(lax.slice(rng, (1,), (2,)), ())
    flat = lax.eq(lax.sub(hi, lo), _c(lo, 0))
    lo = _where(flat, uf.subtract(lo, 0.5), lo)
    hi = _where(flat, uf.add(hi, 0.5), hi)
    return linspace(lo, hi, nb + 1, dtype=dt)


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,  # noqa: A002
              density: bool | None = None) -> tuple[Any, Any]:
    """Counts (or weights) of ``a`` in each bin, and the bin edges.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.histogram(jnp.array([0.0, 0.2, 1.0]), bins=2)[0].tolist()
        [2.0, 1.0]
    """
    from fluxion.numpy.creation import ones_like  # noqa: PLC0415
    from fluxion.numpy.shape import ravel  # noqa: PLC0415
    from fluxion.numpy.sorting import searchsorted  # noqa: PLC0415
    if weights is None:
        check_arraylike("histogram", a, bins)
        (a,) = promote_dtypes_inexact(ensure_array(a))
        w = ones_like(a)
    else:
        check_arraylike("histogram", a, bins, weights)
        if np.shape(a) != np.shape(weights):
            raise ValueError("weights should have the same shape as a.")
        a, w = promote_dtypes_inexact(ensure_array(a), ensure_array(weights))
    edges = histogram_bin_edges(a, bins, range, weights)
    ne = edges.shape[0]
    idx = searchsorted(edges, a, side="right")
    last = lax.reshape(lax.slice(edges, (ne - 1,), (ne,)), ())
    idx = _where(lax.eq(a, last), ne - 1, idx)
    counts = bincount(ravel(idx), ravel(w), length=ne)
    counts = lax.slice(counts, (1,), (ne,))
    if density:
        widths = diff(edges)
        counts = uf.divide(uf.divide(counts, widths), red.sum(counts))
    return counts, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None,  # noqa: A002
                density: bool | None = None) -> tuple[Any, Any, Any]:
    """Two-dimensional histogram of the points ``(x, y)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.histogram2d(jnp.array([0.0, 1.0]), jnp.array([0.0, 1.0]), bins=2)[0].tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    from fluxion.numpy.shape import stack  # noqa: PLC0415
    check_arraylike("histogram2d", x, y)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        bins = [bins, bins]
    sample = stack([ensure_array(x), ensure_array(y)], axis=1)
    h, edges = histogramdd(sample, bins, range, weights, density)
    return h, edges[0], edges[1]


def histogramdd(sample: Any, bins: Any = 10, range: Any = None,  # noqa: A002
                weights: Any = None, density: bool | None = None) -> tuple[Any, list]:
    """Multidimensional histogram of the ``(N, D)`` points in ``sample``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.histogramdd(jnp.array([[0.0], [1.0]]), bins=2)[0].tolist()
        [1.0, 1.0]
    """
    from fluxion.numpy.shape import reshape  # noqa: PLC0415
    from fluxion.numpy.sorting import searchsorted  # noqa: PLC0415
    check_arraylike("histogramdd", sample)
    sample = ensure_array(sample)
    if weights is None:
        (sample,) = promote_dtypes_inexact(sample)
        w = None
    else:
        sample, w = promote_dtypes_inexact(sample, ensure_array(weights))
    N, D = sample.shape  # noqa: N806
    if range is not None and (len(range) != D or any(r is not None and np.shape(r)[0] != 2
                                                      for r in range)):
        raise ValueError(f"range argument must have one entry per dimension, got {range}")
    try:
        nb = len(bins)
        if nb != D:
            raise ValueError("should be a bin for each dimension.")
    except TypeError:
        bins = D * [bins]
    edges = []
    flat = None
    nbin = []
    for i in builtins_range(D):
        col = lax.reshape(lax.slice(sample, (0, i), (N, i + 1)), (N,))
        e = histogram_bin_edges(col, bins[i], range[i] if range is not None else None, w)
        ne = e.shape[0]
        idx = searchsorted(e, col, side="right")
        last = lax.reshape(lax.slice(e, (ne - 1,), (ne,)), ())
        idx = _where(lax.eq(col, last), ne - 1, idx)
        edges.append(e)
        nbin.append(ne + 1)
        flat = idx if flat is None else uf.add(uf.multiply(flat, ne + 1), idx)
    total = math.prod(nbin)
    counts = bincount(flat, w, length=total)
    counts = reshape(counts, tuple(nbin))
    core = tuple(slice(1, -1) for _ in builtins_range(D))
    counts = counts[core]
    if density:
        s = red.sum(counts)
        for i in builtins_range(D):
            shape = [1] * D
            shape[i] = nbin[i] - 2
            counts = uf.divide(counts, reshape(diff(edges[i]), tuple(shape)))
        counts = uf.divide(counts, s)
    return counts, edges


builtins_range = range


# ------------------------------------------------------------------------------------------
# Differences, gradient, interpolation, integration
# ------------------------------------------------------------------------------------------

def _sl(a: Any, start: int | None, stop: int | None, axis: int) -> Any:
    return lax.slice_in_dim(a, start, stop, axis=axis)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th discrete difference along ``axis`` (``!=`` for bool).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.diff(jnp.array([1, 4, 9])).tolist()
        [3, 5]
    """
    from fluxion.numpy.shape import broadcast_to, concatenate  # noqa: PLC0415
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
        hi, lo = _sl(arr, 1, m, ax), _sl(arr, 0, max(m - 1, 0), ax)
        arr = uf.not_equal(hi, lo) if arr.dtype == np.bool_ else uf.subtract(hi, lo)
    return arr


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences of consecutive elements of the flattened array, with optional ends.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.ediff1d(jnp.array([1, 4, 9]), to_begin=0).tolist()
        [0, 3, 5]
    """
    from fluxion.numpy.shape import concatenate, ravel  # noqa: PLC0415
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
    from fluxion.numpy.shape import concatenate, reshape  # noqa: PLC0415
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to fluxion.numpy.gradient is not "
                                  "supported.")
    check_arraylike("gradient", f, *varargs)
    a, *spacing = promote_dtypes_inexact(*(ensure_array(v) for v in (f, *varargs)))

    def along(a: Any, h: Any, ax: int) -> Any:
        n = a.shape[ax]
        s = lambda lo, hi: _sl(a, lo, hi, ax)  # noqa: E731
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
            sx = lambda lo, hi: _sl(h, lo, hi, ax)  # noqa: E731
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


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """One-dimensional piecewise-linear interpolation of ``(xp, fp)`` at ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.interp(jnp.array([0.5, 1.5]), jnp.array([0.0, 1.0, 2.0]),
        ...            jnp.array([0.0, 10.0, 20.0])).tolist()
        [5.0, 15.0]
    """
    from fluxion.numpy import clip  # noqa: PLC0415
    from fluxion.numpy._gather_util import take_along_last  # noqa: PLC0415
    from fluxion.numpy.shape import concatenate, ravel, reshape  # noqa: PLC0415
    from fluxion.numpy.sorting import searchsorted  # noqa: PLC0415
    check_arraylike("interp", x, xp, fp)
    x, xp, fp = ensure_array(x), ensure_array(xp), ensure_array(fp)
    if xp.shape != fp.shape or xp.ndim != 1:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    xa, xpa = promote_dtypes_inexact(x, xp)
    (fpa,) = promote_dtypes_inexact(fp)
    ext_l = isinstance(left, str)
    ext_r = isinstance(right, str)
    for v in (left, right):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"the only valid string value of `left`/`right` is 'extrapolate', "
                             f"but got: {v!r}")
    if xa.dtype.kind == "c":
        raise ValueError("fluxion.numpy.interp: complex x values not supported.")
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        period = uf.abs(period)
        xa = uf.remainder(xa, period)
        xpa = uf.remainder(xpa, period)
        from fluxion.lax import sorting as lax_sorting  # noqa: PLC0415
        xpa, fpa = lax_sorting.sort_key_val(xpa, fpa)
        m = xpa.shape[0]
        xpa = concatenate([uf.subtract(_sl(xpa, m - 1, m, 0), period), xpa,
                           uf.add(_sl(xpa, 0, 1, 0), period)])
        fpa = concatenate([_sl(fpa, m - 1, m, 0), fpa, _sl(fpa, 0, 1, 0)])
    m = xpa.shape[0]
    i = clip(searchsorted(xpa, xa, side="right"), 1, m - 1)
    flat_i = reshape(ravel(i), (1, i.size))
    im1 = uf.subtract(flat_i, 1)

    def g(arr: Any, idx: Any) -> Any:
        return reshape(take_along_last(reshape(arr, (1, m)), idx), i.shape)

    fi, fim1, xpi, xpim1 = g(fpa, flat_i), g(fpa, im1), g(xpa, flat_i), g(xpa, im1)
    df = uf.subtract(fi, fim1)
    dx = uf.subtract(xpi, xpim1)
    delta = uf.subtract(xa, xpim1)
    eps = np.spacing(np.finfo(xpa.dtype).eps)
    dx0 = lax.le(lax.abs(dx), _c(dx, eps))
    f = _where(dx0, fim1, uf.add(fim1, uf.multiply(uf.divide(delta, _where(dx0, 1, dx)), df)))
    if not ext_l:
        la = lax.reshape(_sl(fpa, 0, 1, 0), ()) if left is None else left
        if period is None:
            f = _where(uf.less(xa, lax.reshape(_sl(xpa, 0, 1, 0), ())), la, f)
    if not ext_r:
        ra = lax.reshape(_sl(fpa, m - 1, m, 0), ()) if right is None else right
        if period is None:
            f = _where(uf.greater(xa, lax.reshape(_sl(xpa, m - 1, m, 0), ())), ra, f)
    return f


def _conv(name: str, x: Any, y: Any, mode: str, precision: Any,
          preferred_element_type: Any) -> Any:
    from fluxion.numpy.shape import stack  # noqa: PLC0415
    check_arraylike(name, x, y)
    x, y = ensure_array(x), ensure_array(y)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if preferred_element_type is None:
        x, y = promote_dtypes_inexact(x, y)
    else:
        x, y = promote_dtypes(x, y)
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {x.shape} and {y.shape}.")
    flip_out = False
    if name == "correlate":
        y = uf.conj(y)
        if x.shape[0] < y.shape[0]:
            x, y = y, x
            flip_out = True
    else:
        if x.shape[0] < y.shape[0]:
            x, y = y, x
        y = lax.rev(y, (0,))
    m = y.shape[0]
    if mode == "valid":
        pad = (0, 0)
    elif mode == "same":
        pad = (m // 2, m - m // 2 - 1)
    elif mode == "full":
        pad = (m - 1, m - 1)
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    zero = lax.convert_element_type(0, x.dtype)
    parts = []
    if pad[0]:
        parts.append(lax.broadcast_in_dim(zero, (pad[0],), ()))
    parts.append(x)
    if pad[1]:
        parts.append(lax.broadcast_in_dim(zero, (pad[1],), ()))
    xp = lax.concatenate(parts, 0) if len(parts) > 1 else x
    out_len = xp.shape[0] - m + 1
    # out[k] = sum_j xp[k + j] * y[j]: the m shifted windows of xp, contracted with y.
    windows = stack([lax.slice_in_dim(xp, j, j + out_len, axis=0) for j in range(m)], axis=1)
    out = lax.dot_general(windows, y, (((1,), (0,)), ((), ())), precision,
                          preferred_element_type)
    return lax.rev(out, (0,)) if flip_out else out


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None) -> Any:
    """Discrete linear convolution of two 1-D arrays.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.convolve(jnp.array([1.0, 2.0]), jnp.array([1.0, 1.0])).tolist()
        [1.0, 3.0, 2.0]
    """
    return _conv("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """Cross-correlation of two 1-D arrays (``v`` conjugated).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.correlate(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 1.0])).tolist()
        [3.0, 5.0]
    """
    return _conv("correlate", a, v, mode, precision, preferred_element_type)


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """Integral of ``y`` along ``axis`` by the trapezoidal rule.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.trapezoid(jnp.array([1.0, 2.0, 3.0])))
        4.0
    """
    from fluxion.numpy.creation import asarray  # noqa: PLC0415
    from fluxion.numpy.shape import moveaxis  # noqa: PLC0415
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


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    """Unwrap phase angles by replacing jumps larger than ``discont`` with their
    ``period``-complement.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [round(v, 3) for v in jnp.unwrap(jnp.array([0.0, 6.0])).tolist()]
        [0.0, -0.283]
    """
    from fluxion.numpy.shape import concatenate  # noqa: PLC0415
    check_arraylike("unwrap", p)
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
    ddmod = _where(uf.logical_and(uf.equal(ddmod, uf.negative(interval)), uf.greater(dd, 0)),
                   interval, ddmod)
    corr = _where(uf.less(uf.abs(dd), discont), 0, uf.subtract(ddmod, dd))
    n = p.shape[ax]
    return concatenate((_sl(p, 0, 1, ax), uf.add(_sl(p, 1, n, ax), cumsum(corr, axis=ax))), ax)
