"""Floating-point routines: decomposition (``frexp``, ``ldexp``, ``modf``), neighbours
(``nextafter``, ``spacing``), the sign bit, and tests for and replacement of infinities and NaNs.

Example:
    >>> import fluxion.numpy as jnp
    >>> [v.tolist() for v in jnp.frexp(jnp.array([8.0]))]
    [[0.5], [4]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import (
    check_arraylike,
    check_no_out,
    const_like,
    ensure_array,
    promote_args,
    promote_args_inexact,
    promote_dtypes_inexact,
)
from fluxion.numpy.creation import asarray
from fluxion.numpy.shape import where

__all__ = ["frexp", "ldexp", "modf", "nextafter", "spacing", "signbit", "isposinf", "isneginf",
           "nan_to_num"]


_INT_OF_BITS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def _finfo_int(dt: np.dtype) -> tuple[Any, np.dtype]:
    info = dtypes.finfo(dt)
    return info, np.dtype(_INT_OF_BITS[info.bits])


def frexp(x: Any, /) -> tuple[Any, Any]:
    """Mantissa in ``[0.5, 1)`` and int32 exponent with ``x = m * 2**e``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.frexp(jnp.array([8.0]))]
        [[0.5], [4]]
    """
    check_arraylike("frexp", x)
    (x,) = promote_dtypes_inexact(ensure_array(x))
    if x.dtype.kind == "c":
        raise TypeError("frexp does not support complex-valued inputs")
    info, it = _finfo_int(x.dtype)
    mask = (1 << info.nexp) - 1
    bias = 1 - info.minexp
    tiny = lax.lt(lax.abs(x), const_like(x, info.tiny))
    xn = lax.select(tiny, lax.mul(x, const_like(x, float(1 << info.nmant))), x)
    bits = lax.bitcast_convert_type(xn, it)
    ic = lambda v: lax.convert_element_type(v, it)
    e0 = lax.select(tiny, lax.broadcast_in_dim(ic(-info.nmant), x.shape, ()),
                    lax.broadcast_in_dim(ic(0), x.shape, ()))
    expo = lax.bitwise_and(lax.shift_right_arithmetic(bits, ic(info.nmant)), ic(mask))
    e = lax.add(e0, lax.add(lax.sub(expo, ic(bias)), ic(1)))
    bits = lax.bitwise_and(bits, lax.bitwise_not(ic(np.array(mask, it) << info.nmant)))
    bits = lax.bitwise_or(bits, ic(np.array(bias - 1, it) << info.nmant))
    m = lax.bitcast_convert_type(bits, x.dtype)
    special = uf.logical_or(uf.logical_or(uf.isinf(x), uf.isnan(x)), lax.eq(x, const_like(x, 0)))
    e = lax.select(special, lax.broadcast_in_dim(ic(0), x.shape, ()), e)
    return lax.select(special, x, m), lax.convert_element_type(e, np.int32)


def ldexp(x1: Any, x2: Any, /) -> Any:
    """Elementwise ``x1 * 2**x2`` (``x2`` integer).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.ldexp(0.5, 4))
        8.0
    """
    check_arraylike("ldexp", x1, x2)
    x1, x2 = ensure_array(x1), ensure_array(x2)
    if x1.dtype.kind == "c" or dtypes.issubdtype(x2.dtype, np.inexact):
        raise ValueError(f"ldexp not supported for input types {(x1.dtype, x2.dtype)}")
    (x1,) = promote_args_inexact("ldexp", x1)
    x2 = lax.convert_element_type(x2, x1.dtype)
    m, e = frexp(x1)
    # jnp's add: x1 and x2 broadcast (and the rank-promotion config applies), as in jax
    e = lax.convert_element_type(uf.add(lax.convert_element_type(e, x2.dtype), x2), x1.dtype)
    pos = lax.gt(e, const_like(e, 0))
    m = where(pos, uf.multiply(m, const_like(m, 2)), m)
    e = where(pos, lax.sub(e, const_like(e, 1)), e)
    out = lax.mul(m, lax.pow(const_like(m, 2), e))
    return where(uf.logical_or(uf.isinf(x1), lax.eq(x1, const_like(x1, 0))), x1, out)


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    """Fractional and integral parts, both with the sign of ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [float(v) for v in jnp.modf(-1.5)]
        [-0.5, -1.0]
    """
    check_arraylike("modf", x)
    check_no_out("modf", out)
    (x,) = promote_dtypes_inexact(ensure_array(x))
    whole = where(lax.ge(x, const_like(x, 0)), uf.floor(x), uf.ceil(x))
    return uf.subtract(x, whole), whole


def nextafter(x1: Any, x2: Any, /) -> Any:
    """The next representable value after ``x1`` towards ``x2``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nextafter(1.0, 2.0)) > 1.0
        True
    """
    return lax.nextafter(*promote_args_inexact("nextafter", x1, x2))


def spacing(x: Any, /) -> Any:
    """Distance from ``x`` to the next representable value away from zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.spacing(1.0)) == float(jnp.finfo(jnp.float32).eps)
        True
    """
    (x,) = promote_args_inexact("spacing", x)
    if x.dtype.kind == "c":
        raise ValueError("fluxion.numpy.spacing is not defined for complex inputs.")
    inf = const_like(x, np.inf)
    if x.dtype == np.float16:
        return lax.sub(lax.nextafter(x, lax.broadcast_in_dim(inf, x.shape, ())), x)
    towards = uf.copysign(lax.broadcast_in_dim(inf, x.shape, ()), x)
    result = lax.sub(lax.nextafter(x, towards), x)
    tiny = dtypes.finfo(x.dtype).smallest_subnormal
    tiny_b = lax.broadcast_in_dim(const_like(x, tiny), x.shape, ())
    return where(lax.eq(result, const_like(result, 0)), uf.copysign(tiny_b, x), result)


def signbit(x: Any, /) -> Any:
    """Elementwise: the sign bit is set (true for -0.0).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.signbit(jnp.array([-0.0, 1.0])).tolist()
        [True, False]
    """
    (x,) = promote_args("signbit", x, extended=True)
    dt = x.dtype
    if dtypes.issubdtype(dt, np.integer):
        return lax.lt(x, const_like(x, 0))
    if dt == np.bool_:
        return lax.broadcast_in_dim(False, x.shape, ())
    if not dtypes.issubdtype(dt, np.floating):
        raise ValueError(f"fluxion.numpy.signbit is not well defined for {dt}")
    info, it = _finfo_int(dt)
    bits = lax.bitcast_convert_type(x, it)
    return lax.lt(bits, lax.convert_element_type(0, it))


def _posneg_inf(name: str, x: Any, inf: float, out: Any) -> Any:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to {name} is not supported.")
    check_arraylike(name, x, extended=True)
    x = ensure_array(x)
    if dtypes.issubdtype(x.dtype, np.floating):
        return lax.eq(x, const_like(x, inf))
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        raise ValueError("isposinf/isneginf are not well defined for complex types")
    return lax.broadcast_in_dim(False, x.shape, ())


def isposinf(x: Any, /, out: None = None) -> Any:
    """Elementwise test for +inf.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isposinf(jnp.array([jnp.inf, -jnp.inf])).tolist()
        [True, False]
    """
    return _posneg_inf("isposinf", x, np.inf, out)


def isneginf(x: Any, /, out: None = None) -> Any:
    """Elementwise test for -inf.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isneginf(jnp.array([jnp.inf, -jnp.inf])).tolist()
        [False, True]
    """
    return _posneg_inf("isneginf", x, -np.inf, out)


@one_program_static(static_argnames=("copy",))
def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
    """Replace NaN with ``nan`` and infinities with ``posinf``/``neginf`` (the dtype's extremes
    by default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.nan_to_num(jnp.array([jnp.nan, 1.0])).tolist()
        [0.0, 1.0]
    """
    check_arraylike("nan_to_num", x, extended=True)
    x = ensure_array(x)
    dt = x.dtype
    if not dtypes.issubdtype(dt, np.inexact):
        return x
    if dt.kind == "c":
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(dt)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where(uf.isnan(x), asarray(nan, dtype=dt), x)
    out = where(isposinf(out), asarray(posinf, dtype=dt), out)
    return where(isneginf(out), asarray(neginf, dtype=dt), out)
