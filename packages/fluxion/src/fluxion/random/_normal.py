"""The normal family: ``normal`` (real or complex), ``truncated_normal``, ``lognormal``, and the
distributions built from normal draws: ``maxwell``, ``double_sided_maxwell`` and ``wald`` (inverse
Gaussian).

Example:
    >>> import fluxion
    >>> fluxion.random.normal(fluxion.random.key(0), (2, 3)).shape
    (2, 3)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.random._discrete import _rademacher_raw
from fluxion.random._uniform import _uniform_raw
from fluxion.random._util import (
    Shape,
    broadcast_shapes_or_check,
    check_safe_cast,
    const,
    float_dtype,
    sampler_jit,
    shape_of,
    shape_tuple,
    split_pair,
    use_key,
)

__all__ = ["normal", "truncated_normal", "lognormal", "maxwell", "double_sided_maxwell", "wald"]


def _normal_real(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    lo = np.asarray(np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype), dtype)
    u = _uniform_raw(kd, shape, dtype, lo, np.array(1.0, dtype))
    return lax.mul(const(dtype, np.sqrt(2)), lax.erf_inv(u))


def _normal_any(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if dtypes.issubdtype(dtype, np.complexfloating):
        rdt = np.dtype(np.array(0, dtype).real.dtype)
        k_re, k_im = split_pair(kd)
        re = lax.convert_element_type(_normal_real(k_re, shape, rdt), dtype)
        im = lax.convert_element_type(_normal_real(k_im, shape, rdt), dtype)
        z = lax.add(re, lax.mul(const(dtype, 1j), im))
        return lax.div(z, const(dtype, np.sqrt(2)))
    return _normal_real(kd, shape, dtype)


@sampler_jit(static_argnums=(1, 2))
def _normal_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _normal_any(kd, shape, dtype)


def normal(key: Any, shape: Shape = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Standard normal samples (float or complex dtype). ``out_sharding``: the result's
    sharding (explicit mesh axes), as in JAX.

    Example:
        >>> import fluxion
        >>> fluxion.random.normal(fluxion.random.key(0), (2, 3)).shape
        (2, 3)
    """
    if out_sharding is not None:
        return with_out_sharding("random.normal", out_sharding, normal, key, shape, dtype)
    kd, _, _ = use_key("normal", key)
    dt = float_dtype("normal", dtype, (np.inexact,))
    return _normal_impl(kd, shape_tuple("normal", shape), dt)


@sampler_jit(static_argnums=(3, 4))
def _truncated_normal_impl(kd: Any, lower: Any, upper: Any, shape: tuple[int, ...],
                           dtype: np.dtype) -> Any:
    sqrt2 = const(dtype, np.sqrt(2))
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    u = _uniform_raw(kd, shape, dtype, a, b)
    out = lax.mul(sqrt2, lax.erf_inv(u))
    lo = lax.nextafter(lower, jnp.full(shape_of(lower), np.inf, dtype))
    hi = lax.nextafter(upper, jnp.full(shape_of(upper), -np.inf, dtype))
    return jnp.clip(out, lo, hi)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Shape | None = None,
                     dtype: Any = None) -> Any:
    """Standard normal samples truncated to ``[lower, upper]``.

    Example:
        >>> import fluxion
        >>> x = fluxion.random.truncated_normal(fluxion.random.key(0), -1.0, 1.0, (5,))
        >>> bool((abs(x) <= 1).all())
        True
    """
    kd, _, _ = use_key("truncated_normal", key)
    dt = float_dtype("truncated_normal", dtype)
    shape = broadcast_shapes_or_check("truncated_normal", shape, lower, upper)
    return _truncated_normal_impl(kd, lower, upper, shape, dt)


@sampler_jit(static_argnums=(3, 4))
def _lognormal_impl(kd: Any, sigma: Any, _unused: Any, shape: tuple[int, ...],
                    dtype: np.dtype) -> Any:
    sigma = lax.convert_element_type(sigma, dtype)
    return lax.exp(jnp.multiply(_normal_any(kd, shape, dtype), sigma))


def lognormal(key: Any, sigma: Any = np.float32(1), shape: Shape | None = None,
              dtype: Any = None) -> Any:
    """Log-normal samples: ``exp(sigma * normal)``.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.lognormal(fluxion.random.key(0), shape=(3,)) > 0).all())
        True
    """
    kd, _, _ = use_key("lognormal", key)
    dt = float_dtype("lognormal", dtype, (np.inexact,))
    shape = broadcast_shapes_or_check("lognormal", shape, sigma)
    check_safe_cast("lognormal", dt, sigma)
    return _lognormal_impl(kd, sigma, 0, shape, dt)


def _maxwell_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    x = _normal_any(kd, (*shape, 3), dtype)
    return lax.sqrt(jnp.sum(lax.mul(x, x), axis=-1))


@sampler_jit(static_argnums=(1, 2))
def _maxwell_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _maxwell_raw(kd, shape, dtype)


def maxwell(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Maxwell (chi with 3 degrees of freedom) samples.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.maxwell(fluxion.random.key(0), (4,)) >= 0).all())
        True
    """
    kd, _, _ = use_key("maxwell", key)
    return _maxwell_impl(kd, shape_tuple("maxwell", shape), float_dtype("maxwell", dtype))


@sampler_jit(static_argnums=(3, 4))
def _double_sided_maxwell_impl(kd: Any, loc: Any, scale: Any, shape: tuple[int, ...],
                               dtype: np.dtype) -> Any:
    pshape = tuple(np.broadcast_shapes(shape_of(loc), shape_of(scale)))
    if not shape:
        shape = pshape
    shape = shape + pshape
    mk, rk = split_pair(kd)
    m = _maxwell_raw(mk, shape, dtype)
    s = _rademacher_raw(rk, shape, dtype)
    return jnp.add(jnp.multiply(jnp.multiply(s, m), scale), loc)


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Shape = (),
                         dtype: Any = None) -> Any:
    """Double-sided Maxwell samples: a random sign times a Maxwell sample, scaled and shifted.

    Example:
        >>> import fluxion
        >>> fluxion.random.double_sided_maxwell(fluxion.random.key(0), 0.0, 1.0, (3,)).shape
        (3,)
    """
    kd, _, _ = use_key("double_sided_maxwell", key)
    dt = float_dtype("double_sided_maxwell", dtype)
    return _double_sided_maxwell_impl(kd, loc, scale, shape_tuple("double_sided_maxwell", shape),
                                      dt)


@sampler_jit(static_argnums=(2, 3))
def _wald_impl(kd: Any, mean: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    k1, k2 = split_pair(kd)
    mean = jnp.broadcast_to(jnp.asarray(mean).astype(dtype), shape)
    v = _normal_any(k1, shape, dtype)
    z = _uniform_raw(k2, shape, dtype, 0.0, 1.0)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    four, half = const(dtype, 4), const(dtype, 2)
    sqrt_term = lax.sqrt(lax.add(lax.mul(lax.mul(four, mean), y), lax.mul(mean_sq, y_sq)))
    x = lax.sub(lax.add(mean, lax.div(lax.mul(mean_sq, y), half)),
                lax.mul(lax.div(mean, half), sqrt_term))
    return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))


def wald(key: Any, mean: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian) samples with ``mean``.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.wald(fluxion.random.key(0), 1.0, (3,)) > 0).all())
        True
    """
    kd, _, _ = use_key("wald", key)
    dt = float_dtype("wald", dtype)
    shape = broadcast_shapes_or_check("wald", shape, mean)
    check_safe_cast("wald", dt, mean)
    return _wald_impl(kd, mean, shape, dt)
