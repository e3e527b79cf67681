"""NaN-ignoring reductions: ``nansum``, ``nanprod``, ``nanmin``, ``nanmax``, ``nanmean``,
``nanvar``, ``nanstd``, ``nanargmin`` and ``nanargmax``.

Example:
    >>> import fluxion.numpy as jnp
    >>> float(jnp.nanmean(jnp.array([1.0, jnp.nan, 3.0])))
    2.0
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import reductions as red
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import check_arraylike, check_no_out, const_like, ensure_array

# ``where`` is also the name of the reductions' mask parameter.
from fluxion.numpy.shape import where as _where

__all__ = ["nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanvar", "nanstd", "nanargmax",
           "nanargmin"]


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
        return _where(allnan, const_like(a, np.nan), out)
    return out


@one_program_static(static_argnames=("axis", "out", "keepdims"))
def nanmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Minimum ignoring NaNs (NaN where every element is NaN).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanmin(jnp.array([jnp.nan, 2.0, 1.0])))
        1.0
    """
    check_no_out("nanmin", out)
    return _nan_reduction(a, "nanmin", red.min, np.inf, initial is None, axis=axis,
                          keepdims=keepdims, initial=initial, where=where)


@one_program_static(static_argnames=("axis", "out", "keepdims"))
def nanmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Maximum ignoring NaNs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanmax(jnp.array([jnp.nan, 2.0, 1.0])))
        2.0
    """
    check_no_out("nanmax", out)
    return _nan_reduction(a, "nanmax", red.max, -np.inf, initial is None, axis=axis,
                          keepdims=keepdims, initial=initial, where=where)


@one_program_static(static_argnames=("axis", "dtype", "out", "keepdims"))
def nansum(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Sum treating NaNs as zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nansum(jnp.array([jnp.nan, 2.0, 1.0])))
        3.0
    """
    check_no_out("nansum", out)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "nansum")
    return _nan_reduction(a, "nansum", red.sum, 0, False, axis=axis, dtype=dtype,
                          keepdims=keepdims, initial=initial, where=where)


@one_program_static(static_argnames=("axis", "dtype", "out", "keepdims"))
def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """Product treating NaNs as one.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanprod(jnp.array([jnp.nan, 2.0, 3.0])))
        6.0
    """
    check_no_out("nanprod", out)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "nanprod")
    return _nan_reduction(a, "nanprod", red.prod, 1, False, axis=axis, dtype=dtype,
                          keepdims=keepdims, initial=initial, where=where)


@one_program_static(static_argnames=("axis", "dtype", "out", "keepdims"))
def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, where: Any = None) -> Any:
    """Mean of the non-NaN elements.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanmean(jnp.array([jnp.nan, 2.0, 4.0])))
        3.0
    """
    check_no_out("nanmean", out)
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


@one_program_static(static_argnames=("axis", "dtype", "out", "keepdims"))
def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """Variance of the non-NaN elements.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanvar(jnp.array([jnp.nan, 1.0, 3.0])))
        1.0
    """
    check_no_out("nanvar", out)
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
    bad = lax.le(normalizer, const_like(normalizer, 0))
    result = red.sum(centered, axis, keepdims=keepdims, where=where)
    result = _where(bad, np.nan, result)
    divisor = _where(bad, 1, normalizer)
    result = lax.div(result, lax.convert_element_type(divisor, result.dtype))
    return lax.convert_element_type(result, dt, weak_type=result.weak_type)


@one_program_static(static_argnames=("axis", "dtype", "out", "keepdims"))
def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """Standard deviation of the non-NaN elements.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nanstd(jnp.array([jnp.nan, 1.0, 3.0])))
        1.0
    """
    check_no_out("nanstd", out)
    return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                           mean=mean))


def _nanarg(name: str, a: Any, axis: Any, out: Any, keepdims: bool, is_max: bool) -> Any:
    check_no_out(name, out)
    check_arraylike(name, a, extended=True)  # key arrays: argmax's ValueError, as JAX
    a = ensure_array(a)
    fn = red.argmax if is_max else red.argmin
    axis = None if axis is None else operator.index(axis)
    if not dtypes.issubdtype(a.dtype, np.inexact):
        return fn(a, axis=axis, keepdims=keepdims)
    mask = uf.isnan(a)
    filled = _where(mask, -np.inf if is_max else np.inf, a)
    res = fn(filled, axis=axis, keepdims=keepdims)
    return _where(red.all(mask, axis=axis, keepdims=keepdims), -1, res)


@one_program_static(static_argnames=("axis", "out", "keepdims"))
def nanargmax(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None
              ) -> Any:
    """Index of the maximum ignoring NaNs (-1 where all are NaN).

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.nanargmax(jnp.array([jnp.nan, 2.0, 1.0])))
        1
    """
    return _nanarg("nanargmax", a, axis, out, bool(keepdims), True)


@one_program_static(static_argnames=("axis", "out", "keepdims"))
def nanargmin(a: Any, axis: int | None = None, out: None = None, keepdims: bool | None = None
              ) -> Any:
    """Index of the minimum ignoring NaNs (-1 where all are NaN).

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.nanargmin(jnp.array([jnp.nan, 2.0, 1.0])))
        2
    """
    return _nanarg("nanargmin", a, axis, out, bool(keepdims), False)
