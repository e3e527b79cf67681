"""More elementwise functions: comparisons with tolerance, float decomposition (frexp, ldexp,
modf), integer gcd/lcm, NaN handling, bit packing, and the array-API aliases.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.isclose(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.1])).tolist()
    [True, False]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._util import (
    canonical_axis,
    check_arraylike,
    ensure_array,
    promote_args,
    promote_args_inexact,
    promote_dtypes,
    promote_dtypes_inexact,
)

__all__ = [
    "isclose", "allclose", "array_equal", "array_equiv", "angle", "divmod", "float_power",
    "fmax", "fmin", "frexp", "ldexp", "modf", "gcd", "lcm", "heaviside", "i0", "iscomplex",
    "isreal", "isneginf", "isposinf", "logaddexp2", "nan_to_num", "nextafter", "signbit",
    "spacing", "bitwise_count", "fabs", "packbits", "unpackbits", "acos", "acosh", "asin",
    "asinh", "atan", "atanh", "atan2", "bitwise_invert", "bitwise_left_shift",
    "bitwise_right_shift", "pow", "astype",
]

_INT_OF_BITS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def _c(x: Any, value: Any) -> Any:
    return lax.convert_element_type(value, x.dtype, weak_type=getattr(x, "weak_type", False))


def _bcast(*xs: Any) -> list[Any]:
    from fluxion.numpy.shape import broadcast_arrays  # noqa: PLC0415
    return broadcast_arrays(*xs)


def _where(c: Any, a: Any, b: Any) -> Any:
    from fluxion.numpy.shape import where  # noqa: PLC0415
    return where(c, a, b)


def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (infinities equal when of the same sign).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isclose(1.0, 1.0 + 1e-9).tolist()
        True
    """
    a, b = promote_args("isclose", a, b)
    a, b = promote_args_inexact("isclose", a, b)
    dt = a.dtype
    if dt.kind == "c":
        dt = np.dtype(np.finfo(dt).dtype)
    rt = lax.convert_element_type(rtol, dt)
    at = lax.convert_element_type(atol, dt)
    in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(at, lax.mul(rt, lax.abs(b))))
    out = uf.logical_or(lax.eq(a, b), uf.logical_and(uf.isfinite(b), in_range))
    if equal_nan:
        out = uf.logical_or(out, uf.logical_and(uf.isnan(a), uf.isnan(b)))
    return out


def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Any:
    """Whether :func:`isclose` holds everywhere.

    Example:
        >>> import fluxion.numpy as jnp
        >>> bool(jnp.allclose(jnp.ones(3), jnp.ones(3)))
        True
    """
    from fluxion.numpy.reductions import all as _all  # noqa: PLC0415
    check_arraylike("allclose", a, b)
    return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """Whether two arrays have the same shape and elements (a 0-d bool array).

    Example:
        >>> import fluxion.numpy as jnp
        >>> bool(jnp.array_equal(jnp.arange(3), jnp.arange(3)))
        True
    """
    from fluxion.numpy.creation import array  # noqa: PLC0415
    from fluxion.numpy.reductions import all as _all  # noqa: PLC0415
    a1, a2 = ensure_array(a1), ensure_array(a2)
    if a1.shape != a2.shape:
        return array(False, dtype=np.bool_)
    eq = uf.equal(a1, a2)
    if equal_nan:
        eq = uf.logical_or(eq, uf.logical_and(uf.isnan(a1), uf.isnan(a2)))
    return _all(eq)


def array_equiv(a1: Any, a2: Any) -> Any:
    """Whether two arrays are equal after broadcasting (False when they don't broadcast).

    Example:
        >>> import fluxion.numpy as jnp
        >>> bool(jnp.array_equiv(jnp.ones((2, 3)), jnp.ones(3)))
        True
    """
    from fluxion.numpy.creation import array  # noqa: PLC0415
    from fluxion.numpy.reductions import all as _all  # noqa: PLC0415
    a1, a2 = ensure_array(a1), ensure_array(a2)
    try:
        eq = uf.equal(a1, a2)
    except (ValueError, TypeError):
        return array(False)
    return _all(eq)


def angle(z: Any, deg: bool = False) -> Any:
    """The argument (phase angle) of complex ``z``, in radians or degrees.

    Example:
        >>> import fluxion.numpy as jnp
        >>> round(float(jnp.angle(1j)), 4)
        1.5708
    """
    check_arraylike("angle", z)
    z = ensure_array(z)
    re, im = uf.real(z), uf.imag(z)
    dt = re.dtype
    if not dtypes.issubdtype(dt, np.inexact) or (dtypes.issubdtype(z.dtype, np.floating)
                                                 and z.ndim == 0):
        dt = dtypes.default_float_dtype()
        re = lax.convert_element_type(re, dt)
        im = lax.convert_element_type(im, dt)
    out = lax.atan2(im, re)
    return uf.degrees(out) if deg else out


def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:  # noqa: A001
    """``(floor_divide(x1, x2), remainder(x1, x2))``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.divmod(jnp.array([7, -7]), 2)]
        [[3, -4], [1, 1]]
    """
    x1, x2 = promote_args("divmod", x1, x2)
    if x1.dtype == np.bool_:
        raise TypeError("divmod does not accept dtype bool")
    if dtypes.issubdtype(x1.dtype, np.integer):
        return uf.floor_divide(x1, x2), uf.remainder(x1, x2)
    mod = lax.rem(x1, x2)
    x1c = lax.select(lax.eq(x2, _c(x2, 0)), x1, lax.sub(x1, mod))
    div = lax.div(x1c, x2)
    ind = lax.bitwise_and(lax.ne(mod, _c(mod, 0)), lax.ne(lax.sign(x2), lax.sign(mod)))
    mod = lax.select(ind, lax.add(mod, x2), mod)
    div = lax.select(ind, lax.sub(div, _c(div, 1)), div)
    # round half away from zero (div is already integral up to rounding error)
    half = _c(div, 0.5)
    rounded = lax.select(lax.ge(div, _c(div, 0)), lax.floor(lax.add(div, half)),
                         lax.ceil(lax.sub(div, half)))
    return rounded, mod


def float_power(x: Any, y: Any, /) -> Any:
    """Elementwise ``x ** y`` in floating point.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.float_power(2, 3))
        8.0
    """
    return lax.pow(*promote_args_inexact("float_power", x, y))


def fmax(x1: Any, x2: Any) -> Any:
    """Elementwise maximum that ignores NaNs (NaN only when both are NaN).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.fmax(jnp.nan, 1.0))
        1.0
    """
    return _where(uf.logical_or(uf.greater(x1, x2), uf.isnan(x2)), x1, x2)


def fmin(x1: Any, x2: Any) -> Any:
    """Elementwise minimum that ignores NaNs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.fmin(jnp.nan, 1.0))
        1.0
    """
    return _where(uf.logical_or(uf.less(x1, x2), uf.isnan(x2)), x1, x2)


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
    tiny = lax.lt(lax.abs(x), _c(x, info.tiny))
    xn = lax.select(tiny, lax.mul(x, _c(x, float(1 << info.nmant))), x)
    bits = lax.bitcast_convert_type(xn, it)
    ic = lambda v: lax.convert_element_type(v, it)  # noqa: E731
    e0 = lax.select(tiny, lax.broadcast_in_dim(ic(-info.nmant), x.shape, ()),
                    lax.broadcast_in_dim(ic(0), x.shape, ()))
    expo = lax.bitwise_and(lax.shift_right_arithmetic(bits, ic(info.nmant)), ic(mask))
    e = lax.add(e0, lax.add(lax.sub(expo, ic(bias)), ic(1)))
    bits = lax.bitwise_and(bits, lax.bitwise_not(ic(np.array(mask, it) << info.nmant)))
    bits = lax.bitwise_or(bits, ic(np.array(bias - 1, it) << info.nmant))
    m = lax.bitcast_convert_type(bits, x.dtype)
    special = uf.logical_or(uf.logical_or(uf.isinf(x), uf.isnan(x)), lax.eq(x, _c(x, 0)))
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
    e = lax.convert_element_type(lax.add(lax.convert_element_type(e, x2.dtype), x2), x1.dtype)
    pos = lax.gt(e, _c(e, 0))
    m = lax.select(pos, lax.mul(m, _c(m, 2)), m)
    e = lax.select(pos, lax.sub(e, _c(e, 1)), e)
    out = lax.mul(m, lax.pow(_c(m, 2), e))
    return _where(uf.logical_or(uf.isinf(x1), lax.eq(x1, _c(x1, 0))), x1, out)


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    """Fractional and integral parts, both with the sign of ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [float(v) for v in jnp.modf(-1.5)]
        [-0.5, -1.0]
    """
    check_arraylike("modf", x)
    (x,) = promote_dtypes_inexact(ensure_array(x))
    whole = _where(lax.ge(x, _c(x, 0)), uf.floor(x), uf.ceil(x))
    return uf.subtract(x, whole), whole


def _gcd_steps(dt: np.dtype) -> int:
    bits = 1 if dt == np.bool_ else np.iinfo(dt).bits
    # Euclid's algorithm needs at most ~log_phi(2**bits) steps (Lamé's theorem).
    return int(bits * 1.4405) + 3


def gcd(x1: Any, x2: Any) -> Any:
    """Elementwise greatest common divisor of integers (non-negative).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.gcd(jnp.array([12, 7]), jnp.array([18, 0])).tolist()
        [6, 7]
    """
    check_arraylike("gcd", x1, x2)
    x1, x2 = promote_dtypes(ensure_array(x1), ensure_array(x2))
    if not dtypes.issubdtype(x1.dtype, np.integer):
        raise ValueError("Arguments to fluxion.numpy.gcd must be integers.")
    a, b = _bcast(uf.abs(x1), uf.abs(x2))
    # Unrolled Euclid (no while_loop needed): a fixed bound on the number of steps.
    zero = _c(b, 0)
    for _ in range(_gcd_steps(a.dtype)):
        nz = lax.ne(b, zero)
        safe_b = lax.select(nz, b, lax.add(lax.broadcast_in_dim(_c(b, 1), b.shape, ()), zero))
        a, b = lax.select(nz, b, a), lax.select(nz, lax.rem(a, safe_b), b)
    return a


def lcm(x1: Any, x2: Any) -> Any:
    """Elementwise least common multiple of integers.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.lcm(jnp.array([4, 0]), jnp.array([6, 3])).tolist()
        [12, 0]
    """
    check_arraylike("lcm", x1, x2)
    x1, x2 = promote_dtypes(ensure_array(x1), ensure_array(x2))
    x1, x2 = uf.abs(x1), uf.abs(x2)
    if not dtypes.issubdtype(x1.dtype, np.integer):
        raise ValueError("Arguments to fluxion.numpy.lcm must be integers.")
    d = gcd(x1, x2)
    safe = _where(lax.eq(d, _c(d, 0)), _c(d, 1), d)
    return _where(lax.eq(d, _c(d, 0)), _c(d, 0), uf.multiply(x1, uf.floor_divide(x2, safe)))


def heaviside(x1: Any, x2: Any, /) -> Any:
    """Heaviside step: 0 for ``x1 < 0``, ``x2`` at 0, 1 for ``x1 > 0``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.heaviside(jnp.array([-1.0, 0.0, 2.0]), 0.5).tolist()
        [0.0, 0.5, 1.0]
    """
    check_arraylike("heaviside", x1, x2)
    x1, x2 = promote_dtypes_inexact(ensure_array(x1), ensure_array(x2))
    zero = _c(x1, 0)
    return _where(lax.lt(x1, zero), zero,
                  _where(lax.gt(x1, zero), _c(x1, 1), _where(uf.isnan(x1), x1, x2)))


def i0(x: Any) -> Any:
    """Modified Bessel function of the first kind, order 0.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.i0(0.0))
        1.0
    """
    (x,) = promote_args_inexact("i0", x)
    if not dtypes.issubdtype(x.dtype, np.floating):
        raise ValueError(f"Unsupported input type to fluxion.numpy.i0: {x.dtype}")
    ax = lax.abs(x)
    return lax.mul(lax.exp(ax), lax.bessel_i0e(ax))


def iscomplex(x: Any) -> Any:
    """Elementwise: imaginary part non-zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.iscomplex(jnp.array([1 + 1j, 2])).tolist()
        [True, False]
    """
    i = uf.imag(x)
    return lax.ne(i, _c(i, 0))


def isreal(x: Any) -> Any:
    """Elementwise: imaginary part zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isreal(jnp.array([1 + 1j, 2])).tolist()
        [False, True]
    """
    i = uf.imag(x)
    return lax.eq(i, _c(i, 0))


def _posneg_inf(name: str, x: Any, inf: float, out: Any) -> Any:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to {name} is not supported.")
    check_arraylike(name, x)
    x = ensure_array(x)
    if dtypes.issubdtype(x.dtype, np.floating):
        return lax.eq(x, _c(x, inf))
    if x.dtype.kind == "c":
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


def logaddexp2(x1: Any, x2: Any, /) -> Any:
    """Elementwise ``log2(2**x1 + 2**x2)``, computed stably.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.logaddexp2(1.0, 1.0))
        2.0
    """
    x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
    amax = lax.max(x1, x2)
    invln2 = _c(amax, 1 / np.log(2))
    if x1.dtype.kind == "c":
        delta = lax.sub(lax.add(x1, x2), lax.mul(amax, _c(amax, 2)))
        out = lax.add(amax, lax.mul(invln2, lax.log1p(lax.exp2(delta))))
        period = np.pi / np.log(2)
        im = lax.imag(out)
        pr = lax.convert_element_type(period, im.dtype)
        wrapped = lax.sub(uf.remainder(lax.add(im, pr), lax.mul(pr, lax.convert_element_type(
            2, im.dtype))), pr)
        return lax.complex(lax.real(out), wrapped)
    delta = lax.sub(x1, x2)
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2),
                      lax.add(amax, lax.mul(invln2, lax.log1p(lax.exp2(lax.neg(lax.abs(delta)))))))


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
    """Replace NaN with ``nan`` and infinities with ``posinf``/``neginf`` (the dtype's extremes
    by default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.nan_to_num(jnp.array([jnp.nan, 1.0])).tolist()
        [0.0, 1.0]
    """
    from fluxion.numpy.creation import asarray  # noqa: PLC0415
    check_arraylike("nan_to_num", x)
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
    out = _where(uf.isnan(x), asarray(nan, dtype=dt), x)
    out = _where(isposinf(out), asarray(posinf, dtype=dt), out)
    return _where(isneginf(out), asarray(neginf, dtype=dt), out)


def nextafter(x1: Any, x2: Any, /) -> Any:
    """The next representable value after ``x1`` towards ``x2``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.nextafter(1.0, 2.0)) > 1.0
        True
    """
    return lax.nextafter(*promote_args_inexact("nextafter", x1, x2))


def signbit(x: Any, /) -> Any:
    """Elementwise: the sign bit is set (true for -0.0).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.signbit(jnp.array([-0.0, 1.0])).tolist()
        [True, False]
    """
    (x,) = promote_args("signbit", x)
    dt = x.dtype
    if dtypes.issubdtype(dt, np.integer):
        return lax.lt(x, _c(x, 0))
    if dt == np.bool_:
        return lax.broadcast_in_dim(False, x.shape, ())
    if not dtypes.issubdtype(dt, np.floating):
        raise ValueError(f"fluxion.numpy.signbit is not well defined for {dt}")
    info, it = _finfo_int(dt)
    bits = lax.bitcast_convert_type(x, it)
    return lax.lt(bits, lax.convert_element_type(0, it))


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
    inf = _c(x, np.inf)
    if x.dtype == np.float16:
        return lax.sub(lax.nextafter(x, lax.broadcast_in_dim(inf, x.shape, ())), x)
    towards = uf.copysign(lax.broadcast_in_dim(inf, x.shape, ()), x)
    result = lax.sub(lax.nextafter(x, towards), x)
    tiny = dtypes.finfo(x.dtype).smallest_subnormal
    tiny_b = lax.broadcast_in_dim(_c(x, tiny), x.shape, ())
    return _where(lax.eq(result, _c(result, 0)), uf.copysign(tiny_b, x), result)


def bitwise_count(x: Any, /) -> Any:
    """Number of 1 bits in ``|x|`` (uint8).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.bitwise_count(jnp.array([7, -1])).tolist()
        [3, 1]
    """
    (x,) = promote_args("bitwise_count", x)
    if x.dtype == np.bool_:
        x = lax.convert_element_type(x, np.uint8)
    return lax.convert_element_type(lax.population_count(uf.abs(x)), np.uint8)


def fabs(x: Any, /) -> Any:
    """Elementwise absolute value in floating point (complex rejected).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fabs(jnp.array([-2, 3])).tolist()
        [2.0, 3.0]
    """
    check_arraylike("fabs", x)
    if ensure_array(x).dtype.kind == "c":
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return lax.abs(*promote_args_inexact("fabs", x))


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """Pack the truth values of ``a`` into uint8 bytes along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.packbits(jnp.array([1, 0, 1])).tolist()
        [160]
    """
    from fluxion.numpy.reductions import sum as _sum  # noqa: PLC0415
    from fluxion.numpy.shape import ravel, reshape, swapaxes  # noqa: PLC0415
    check_arraylike("packbits", a)
    arr = ensure_array(a)
    if not (dtypes.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    arr = lax.convert_element_type(lax.ne(arr, _c(arr, 0)), np.uint8)
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = swapaxes(arr, axis, -1)
    rem = arr.shape[-1] % 8
    if rem:
        pad = lax.broadcast_in_dim(lax.convert_element_type(0, np.uint8),
                                   arr.shape[:-1] + (8 - rem,), ())
        arr = lax.concatenate([arr, pad], arr.ndim - 1)
    arr = reshape(arr, arr.shape[:-1] + (arr.shape[-1] // 8, 8))
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1]
    sh = lax.broadcast_in_dim(ensure_array(shifts.copy()), arr.shape, (arr.ndim - 1,))
    packed = lax.convert_element_type(_sum(lax.shift_left(arr, sh), axis=-1), np.uint8)
    return swapaxes(packed, axis, -1)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Any:
    """Unpack uint8 bytes into bits (0/1 uint8) along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.unpackbits(jnp.array([160], jnp.uint8)).tolist()
        [1, 0, 1, 0, 0, 0, 0, 0]
    """
    from fluxion.numpy.shape import ravel, reshape, swapaxes  # noqa: PLC0415
    check_arraylike("unpackbits", a)
    arr = ensure_array(a)
    if arr.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = (np.uint8(1) << np.arange(8, dtype=np.uint8)).astype(np.uint8)
    if bitorder == "big":
        bits = bits[::-1].copy()
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = swapaxes(arr, axis, -1)
    shp = arr.shape + (8,)
    x = lax.broadcast_in_dim(arr, shp, tuple(range(arr.ndim)))
    b = lax.broadcast_in_dim(ensure_array(bits), shp, (arr.ndim,))
    un = lax.convert_element_type(lax.gt(lax.bitwise_and(x, b), lax.convert_element_type(
        0, np.uint8)), np.uint8)
    un = reshape(un, un.shape[:-2] + (-1,))
    if count is not None:
        n = un.shape[-1]
        if count > n:
            pad = lax.broadcast_in_dim(lax.convert_element_type(0, np.uint8),
                                       un.shape[:-1] + (count - n,), ())
            un = lax.concatenate([un, pad], un.ndim - 1)
        else:
            un = lax.slice_in_dim(un, 0, count, axis=un.ndim - 1)
    return swapaxes(un, axis, -1)


def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    """``x`` converted to ``dtype``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.astype(jnp.arange(2), jnp.float32).dtype
        dtype('float32')
    """
    check_arraylike("astype", x)
    dt = dtypes.check_and_canonicalize_user_dtype(dtype, "astype")
    return lax.convert_element_type(ensure_array(x), dt)


acos = uf.arccos
acosh = uf.arccosh
asin = uf.arcsin
asinh = uf.arcsinh
atan = uf.arctan
atanh = uf.arctanh
atan2 = uf.arctan2
bitwise_invert = uf.bitwise_not
bitwise_left_shift = uf.left_shift
bitwise_right_shift = uf.right_shift
pow = uf.power  # noqa: A001
_ = canonical_axis
