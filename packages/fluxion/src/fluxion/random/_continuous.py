"""Continuous distributions drawn by transforming uniform samples: ``exponential``, ``laplace``,
``logistic``, ``cauchy``, ``gumbel``, ``pareto``, ``triangular``, ``weibull_min`` and
``rayleigh``.

Example:
    >>> import fluxion
    >>> bool((fluxion.random.exponential(fluxion.random.key(0), (4,)) >= 0).all())
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.random._uniform import _uniform_raw
from fluxion.random._util import (
    Shape,
    broadcast_shapes_or_check,
    check_safe_cast,
    const,
    float_dtype,
    random_bits,
    sampler_jit,
    shape_tuple,
    use_key,
)

__all__ = ["exponential", "laplace", "logistic", "cauchy", "gumbel", "pareto", "triangular",
           "weibull_min", "rayleigh"]


@sampler_jit(static_argnums=(1, 2))
def _exponential_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _exponential_raw(kd, shape, dtype)


def _exponential_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform_raw(kd, shape, dtype, const(dtype, 0), const(dtype, 1))
    return lax.neg(lax.log1p(lax.neg(u)))


def exponential(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard exponential samples.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.exponential(fluxion.random.key(0), (4,)) >= 0).all())
        True
    """
    kd, _, _ = use_key("exponential", key)
    return _exponential_impl(kd, shape_tuple("exponential", shape),
                             float_dtype("exponential", dtype))


def _simple(name: str, body: Any, doc: str) -> Any:
    impl = sampler_jit(static_argnums=(1, 2))(body)

    def sampler(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
        kd, _, _ = use_key(name, key)
        return impl(kd, shape_tuple(name, shape), float_dtype(name, dtype))

    sampler.__name__ = sampler.__qualname__ = name
    sampler.__doc__ = doc
    return sampler


def _laplace_body(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    fi = dtypes.finfo(dtype)
    u = _uniform_raw(kd, shape, dtype, -1.0 + float(fi.epsneg), 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _logistic_body(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    x = _uniform_raw(kd, shape, dtype, float(dtypes.finfo(dtype).tiny), 1.0)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def _cauchy_body(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform_raw(kd, shape, dtype, float(dtypes.finfo(dtype).eps), 1.0)
    return lax.tan(lax.mul(const(dtype, np.pi), lax.sub(u, const(dtype, 0.5))))


laplace = _simple("laplace", _laplace_body, """Laplace samples (location 0, scale 1).

    Example:
        >>> import fluxion
        >>> fluxion.random.laplace(fluxion.random.key(0), (3,)).shape
        (3,)
    """)


logistic = _simple("logistic", _logistic_body, """Standard logistic samples.

    Example:
        >>> import fluxion
        >>> fluxion.random.logistic(fluxion.random.key(0), (3,)).shape
        (3,)
    """)


cauchy = _simple("cauchy", _cauchy_body, """Standard Cauchy samples.

    Example:
        >>> import fluxion
        >>> fluxion.random.cauchy(fluxion.random.key(0), (3,)).shape
        (3,)
    """)


def _gumbel_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Any:
    fi = dtypes.finfo(dtype)
    if mode == "highest" and dtype == np.float32:
        return _gumbel_highest(kd, shape)
    if mode in ("high", "highest"):
        both = _uniform_raw(kd, (2, *shape), dtype, 0.0, 1.0)
        high = lax.reshape(lax.slice_in_dim(both, 0, 1, axis=0), shape)
        low = lax.reshape(lax.slice_in_dim(both, 1, 2, axis=0), shape)
        alt = lax.add(lax.add(high, lax.mul(const(dtype, 2.0 ** -int(fi.nmant)), low)),
                      const(dtype, fi.tiny))
        x = lax.select(lax.ge(high, const(dtype, 0.5)), high, alt)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _uniform_raw(kd, shape, dtype, float(fi.tiny), 1.0)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


def _gumbel_highest(kd: Any, shape: tuple[int, ...]) -> Any:
    u32 = np.dtype(np.uint32)
    b = random_bits(kd, 32, (2, *shape))
    neg = lax.bitwise_not(b)
    lo_bits = lax.slice_in_dim(neg, 1, 2, axis=0)
    carry = lax.convert_element_type(lax.eq(lo_bits, np.uint32(0xFFFFFFFF)), u32)
    neg = lax.add(neg, lax.concatenate([carry, lax.broadcast_in_dim(np.uint32(1), lo_bits.shape,
                                                                     ())], 0))
    b0 = lax.slice_in_dim(b, 0, 1, axis=0)
    flip = lax.lt(b0, np.uint32(1 << 31))
    flip2 = lax.concatenate([flip, flip], 0)
    x = _safe_int_to_float(lax.select(flip2, b, neg))
    x = lax.reshape(x, shape)
    flip = lax.reshape(flip, shape)
    a = lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    c = lax.neg(lax.log(lax.neg(lax.log(x))))
    return lax.select(flip, a, c)


def _safe_int_to_float(b: Any) -> Any:
    """uint32 bit pairs (hi, lo) -> float32 in (0, 1), using all 64 bits (JAX's helper)."""
    hi = lax.slice_in_dim(b, 0, 1, axis=0)
    lo = lax.slice_in_dim(b, 1, 2, axis=0)
    hiclz, loclz = lax.clz(hi), lax.clz(lo)
    full = lax.eq(hiclz, np.uint32(32))
    mant = lax.bitwise_or(lax.shift_left(hi, hiclz),
                          lax.select(full, lax.shift_left(lo, loclz),
                                     lax.shift_right_logical(lo, lax.sub(np.uint32(32), hiclz))))
    mant = lax.shift_right_logical(mant, np.uint32(32 - 23 - 1))
    mant = lax.bitwise_and(mant, np.uint32((1 << 23) - 1))
    lz = lax.select(full, lax.add(np.uint32(32), loclz), hiclz)
    ex = lax.shift_left(lax.sub(np.uint32(126), lz), np.uint32(23))
    ex = lax.bitwise_and(ex, np.uint32((1 << 30) - (1 << 22)))
    return lax.bitcast_convert_type(lax.bitwise_or(ex, mant), np.dtype(np.float32))


@sampler_jit(static_argnums=(1, 2, 3))
def _gumbel_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Any:
    return _gumbel_raw(kd, shape, dtype, mode)


def gumbel(key: Any, shape: Shape = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Standard Gumbel samples; ``mode`` 'low' (default), 'high' or 'highest' trades cost for
    resolution of the far tail.

    Example:
        >>> import fluxion
        >>> fluxion.random.gumbel(fluxion.random.key(0), (3,)).shape
        (3,)
    """
    kd, _, _ = use_key("gumbel", key)
    dt = float_dtype("gumbel", dtype)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _gumbel_impl(kd, shape_tuple("gumbel", shape), dt, mode)


def _pareto_body(kd: Any, b: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    b = lax.convert_element_type(b, dtype)
    return lax.exp(jnp.divide(_exponential_raw(kd, shape, dtype), b))


_pareto_impl = sampler_jit(static_argnums=(2, 3))(_pareto_body)


def pareto(key: Any, b: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Pareto samples with shape parameter ``b`` (support ``[1, inf)``).

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.pareto(fluxion.random.key(0), 3.0, (4,)) >= 1).all())
        True
    """
    kd, _, _ = use_key("pareto", key)
    dt = float_dtype("pareto", dtype)
    shape = broadcast_shapes_or_check("pareto", shape, b)
    check_safe_cast("pareto", dt, b)
    return _pareto_impl(kd, b, shape, dt)


@sampler_jit(static_argnums=(4, 5))
def _triangular_impl(kd: Any, left: Any, mode: Any, right: Any, shape: tuple[int, ...],
                     dtype: np.dtype) -> Any:
    left = jnp.broadcast_to(lax.convert_element_type(left, dtype), shape)
    right = jnp.broadcast_to(lax.convert_element_type(right, dtype), shape)
    mode = jnp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
    fc = lax.div(lax.sub(mode, left), lax.sub(right, left))
    u = _uniform_raw(kd, shape, dtype, 0.0, 1.0)
    rl = lax.sub(right, left)
    out1 = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, rl), lax.sub(mode, left))))
    out2 = lax.sub(right, lax.sqrt(lax.mul(lax.mul(lax.sub(const(dtype, 1), u), rl),
                                           lax.sub(right, mode))))
    return lax.select(lax.lt(u, fc), out1, out2)


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Shape | None = None,
               dtype: Any = None) -> Any:
    """Triangular-distribution samples on ``[left, right]`` with peak at ``mode``.

    Example:
        >>> import fluxion
        >>> x = fluxion.random.triangular(fluxion.random.key(0), 0.0, 0.5, 1.0, (4,))
        >>> bool(((x >= 0) & (x <= 1)).all())
        True
    """
    kd, _, _ = use_key("triangular", key)
    dt = float_dtype("triangular", dtype)
    shape = broadcast_shapes_or_check("triangular", shape, left, mode, right)
    check_safe_cast("triangular", dt, left, mode, right)
    return _triangular_impl(kd, left, mode, right, shape, dt)


@sampler_jit(static_argnums=(3, 4))
def _weibull_min_impl(kd: Any, scale: Any, concentration: Any, shape: tuple[int, ...],
                      dtype: np.dtype) -> Any:
    u = _uniform_raw(kd, shape, dtype, 0, 1)
    return jnp.multiply(jnp.power(lax.neg(lax.log1p(lax.neg(u))),
                                  jnp.divide(1.0, concentration)), scale)


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Shape = (),
                dtype: Any = None) -> Any:
    """Weibull samples with ``scale`` and ``concentration``.

    Example:
        >>> import fluxion
        >>> fluxion.random.weibull_min(fluxion.random.key(0), 1.0, 2.0, (3,)).shape
        (3,)
    """
    kd, _, _ = use_key("weibull_min", key)
    dt = float_dtype("weibull_min", dtype)
    return _weibull_min_impl(kd, scale, concentration, shape_tuple("weibull_min", shape), dt)


@sampler_jit(static_argnums=(2, 3))
def _rayleigh_impl(kd: Any, scale: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform_raw(kd, shape, dtype, 0.0, 1.0)
    scale = jnp.broadcast_to(jnp.asarray(scale).astype(dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), const(dtype, -2))))


def rayleigh(key: Any, scale: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Rayleigh samples with ``scale``.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.rayleigh(fluxion.random.key(0), 1.0, (3,)) >= 0).all())
        True
    """
    kd, _, _ = use_key("rayleigh", key)
    dt = float_dtype("rayleigh", dtype)
    shape = broadcast_shapes_or_check("rayleigh", shape, scale)
    check_safe_cast("rayleigh", dt, scale)
    return _rayleigh_impl(kd, scale, shape, dt)
