"""Cumulative sums and products: ``cumsum``, ``cumprod``, their NaN-ignoring forms and the
array API's ``cumulative_sum`` / ``cumulative_prod``.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.cumsum(jnp.array([1, 2, 3])).tolist()
    [1, 3, 6]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import (
    canonical_axis,
    check_arraylike,
    check_no_out,
    const_like,
    ensure_array,
)
from fluxion.numpy.shape import where

__all__ = ["cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod"]


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
    check_no_out(name, out)
    check_arraylike(name, a)
    a = ensure_array(a)
    # as JAX's jitted cumsum: a weakly typed scalar takes any axis, a strong 0-d one only None
    if axis is None or (a.ndim == 0 and a.weak_type):
        a = lax.reshape(a, (a.size,))
    if axis is None:
        axis = 0
    ax = canonical_axis(axis, a.ndim, name)
    if fill_nan and dtypes.issubdtype(a.dtype, np.inexact):
        a = where(uf.isnan(a), const_like(a, fill_value), a)
    if dtype is None:
        res_t = _promote_int(a.dtype) if promote_integers or a.dtype == np.bool_ else a.dtype
        comp_t = res_t
    elif np.dtype(dtype) == np.bool_:
        res_t = np.dtype(np.bool_)
        if a.dtype != res_t:
            a = lax.ne(a, const_like(a, 0))
        comp_t = _promote_int(res_t)
    else:
        res_t = dtypes.check_and_canonicalize_user_dtype(dtype, name)
        comp_t = res_t
    # strongly typed, as JAX's (a weakly typed operand's cumsum is not weak)
    return lax.convert_element_type(fn(lax.convert_element_type(a, comp_t), ax), res_t)


@one_program_static(static_argnames=("axis", "dtype", "out"))
def cumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative sum along ``axis`` (of the flattened array when None; bool sums as int).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cumsum(jnp.array([1, 2, 3])).tolist()
        [1, 3, 6]
    """
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


@one_program_static(static_argnames=("axis", "dtype", "out"))
def cumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative product along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cumprod(jnp.array([1, 2, 3])).tolist()
        [1, 2, 6]
    """
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


@one_program_static(static_argnames=("axis", "dtype", "out"))
def nancumsum(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative sum treating NaNs as zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.nancumsum(jnp.array([1.0, jnp.nan, 3.0])).tolist()
        [1.0, 1.0, 4.0]
    """
    return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, out, fill_nan=True,
                       fill_value=0)


@one_program_static(static_argnames=("axis", "dtype", "out"))
def nancumprod(a: Any, axis: int | None = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative product treating NaNs as one.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.nancumprod(jnp.array([2.0, jnp.nan, 3.0])).tolist()
        [2.0, 2.0, 6.0]
    """
    return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, out, fill_nan=True,
                       fill_value=1)


def _cumulative_api(name: str, fn: Callable, ident: int, x: Any, axis: Any, dtype: Any,
                    include_initial: bool) -> Any:
    check_arraylike(name, x, extended=True)  # as JAX: the rank checks come before the dtype's
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
    return _cumulative_api("cumulative_sum", lax.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """Array-API cumulative product (``include_initial`` prepends a one).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.cumulative_prod(jnp.array([2, 3]), include_initial=True).tolist()
        [1, 2, 6]
    """
    return _cumulative_api("cumulative_prod", lax.cumprod, 1, x, axis, dtype,
                           include_initial)
