"""Uniform samplers: raw ``bits``, ``uniform`` floats and ``randint`` integers, each JAX's
algorithm on the same threefry bits.

Example:
    >>> import fluxion
    >>> float(fluxion.random.uniform(fluxion.random.key(0))) < 1.0
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.random._util import (
    UINT_DTYPES,
    Shape,
    check_shape,
    const,
    float_dtype,
    random_bits,
    sampler_jit,
    shape_of,
    shape_tuple,
    split_pair,
    to_rank,
    use_key,
)

__all__ = ["bits", "uniform", "randint"]


def bits(key: Any, shape: Shape = (), dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Uniform random bits as unsigned integers (default ``uint32``; ``uint64`` with x64).
    ``out_sharding``: the result's sharding (explicit mesh axes), as in JAX.

    Example:
        >>> import fluxion
        >>> fluxion.random.bits(fluxion.random.key(0), (2,)).dtype
        dtype('uint32')
    """
    if out_sharding is not None:
        return with_out_sharding("random.bits", out_sharding, bits, key, shape, dtype)
    kd, _, _ = use_key("bits", key)
    dt = dtypes.default_uint_dtype() if dtype is None else (
        dtypes.check_and_canonicalize_user_dtype(dtype))
    if not dtypes.issubdtype(dt, np.unsignedinteger):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return random_bits(kd, dt.itemsize * 8, shape_tuple("bits", shape))


def _uniform_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any,
                 maxval: Any) -> Any:
    full = tuple(kd.shape) + tuple(shape)  # kd: a typed key (array)
    minval = to_rank(lax.convert_element_type(minval, dtype), len(full))
    maxval = to_rank(lax.convert_element_type(maxval, dtype), len(full))
    fi = dtypes.finfo(dtype)
    nbits, nmant = int(fi.bits), int(fi.nmant)
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
    rng_bits = 8 if nmant < 8 else nbits
    b = random_bits(kd, rng_bits, shape)
    udt = UINT_DTYPES[nbits]
    if rng_bits != nbits:
        b = lax.convert_element_type(b, udt)
    fbits = lax.shift_right_logical(b, const(udt, rng_bits - nmant))
    fbits = lax.bitwise_or(fbits, np.array(1.0, dtype).view(udt)[()])
    floats = lax.sub(lax.bitcast_convert_type(fbits, dtype), const(dtype, 1.0))
    return lax.max(minval, lax.reshape(lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval),
                                       full))


@sampler_jit(static_argnums=(3, 4))
def _uniform_impl(kd: Any, minval: Any, maxval: Any, shape: tuple[int, ...],
                  dtype: np.dtype) -> Any:
    return _uniform_raw(kd, shape, dtype, minval, maxval)


def uniform(key: Any, shape: Shape = (), dtype: Any = None, minval: Any = 0.0,
            maxval: Any = 1.0, *, out_sharding: Any = None) -> Any:
    """Uniform floats in ``[minval, maxval)`` (default float32; float64 with x64).
    ``out_sharding``: the result's sharding (explicit mesh axes), as in JAX.

    Example:
        >>> import fluxion
        >>> float(fluxion.random.uniform(fluxion.random.key(0))) < 1.0
        True
    """
    if out_sharding is not None:
        return with_out_sharding("random.uniform", out_sharding, uniform, key, shape, dtype,
                                 minval, maxval)
    kd, _, _ = use_key("uniform", key)
    dt = float_dtype("uniform", dtype)
    shape = shape_tuple("uniform", shape)
    return _uniform_impl(kd, minval, maxval, shape, dt)


def _convert_and_clip_integer(val: Any, dtype: np.dtype) -> Any:
    vdt = np.dtype(val.dtype)
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(vdt).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(vdt).max))
    clipped = lax.min(lax.max(val, const(vdt, lo)), const(vdt, hi))
    return jnp.asarray(clipped).astype(dtype)


@sampler_jit(static_argnums=(3, 4))
def _randint_impl(kd: Any, minval: Any, maxval: Any, shape: tuple[int, ...],
                  dtype: np.dtype) -> Any:
    check_shape("randint", shape, shape_of(minval), shape_of(maxval))
    minval = jnp.asarray(minval)
    maxval = jnp.asarray(maxval)
    if not dtypes.issubdtype(minval.dtype, np.integer):
        minval = minval.astype(int)
    if not dtypes.issubdtype(maxval.dtype, np.integer):
        maxval = maxval.astype(int)
    top = _convert_and_clip_integer(jnp.asarray(np.array(np.iinfo(dtype).max, dtype)),
                                    np.dtype(maxval.dtype))
    maxval_out_of_range = lax.gt(maxval, top)
    minval = to_rank(_convert_and_clip_integer(minval, dtype), len(shape))
    maxval = to_rank(_convert_and_clip_integer(maxval, dtype), len(shape))
    maxval_out_of_range = to_rank(maxval_out_of_range, len(shape))
    nbits = np.iinfo(dtype).bits
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
    k1, k2 = split_pair(kd)
    higher = random_bits(k1, nbits, shape)
    lower = random_bits(k2, nbits, shape)
    udt = UINT_DTYPES[nbits]
    span = lax.convert_element_type(lax.sub(maxval, minval), udt)
    le = lax.le(maxval, minval)
    span = lax.select(jnp.broadcast_to(le, span.shape), jnp.ones_like(span), span)
    bump = lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval))
    span = lax.select(jnp.broadcast_to(bump, span.shape), lax.add(span, const(udt, 1)), span)
    mult = lax.rem(const(udt, 2 ** (nbits // 2)), span)
    mult = lax.rem(lax.mul(mult, mult), span)
    off = lax.add(lax.mul(lax.rem(higher, span), mult), lax.rem(lower, span))
    off = lax.rem(off, span)
    return lax.add(minval, lax.convert_element_type(off, dtype))


def randint(key: Any, shape: Shape, minval: Any, maxval: Any, dtype: Any = None, *,
            out_sharding: Any = None) -> Any:
    """Uniform integers in ``[minval, maxval)`` (default int32; int64 with x64).
    ``out_sharding``: the result's sharding (explicit mesh axes), as in JAX.

    Example:
        >>> import fluxion
        >>> int(fluxion.random.randint(fluxion.random.key(0), (), 0, 10)) in range(10)
        True
    """
    if out_sharding is not None:
        return with_out_sharding("random.randint", out_sharding, randint, key, shape, minval,
                                 maxval, dtype)
    kd, _, _ = use_key("randint", key)
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype)
    if not dtypes.issubdtype(dt, np.integer):
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    shape = shape_tuple("randint", shape)
    info = np.iinfo(dt)
    sdt = dt
    if info.bits < 32:
        sdt = np.dtype(np.int32)
        minval = jnp.clip(jnp.asarray(minval).astype("int32"), int(info.min), int(info.max))
        maxval = jnp.clip(jnp.asarray(maxval).astype("int32"), int(info.min), int(info.max) + 1)
    return _randint_impl(kd, minval, maxval, shape, sdt).astype(dt)
