"""Discrete distributions: ``bernoulli``, ``rademacher``, ``geometric``, ``categorical`` (the
Gumbel-max trick), ``poisson`` (Knuth's method below 10, rejection above) and ``binomial``
(inversion for small means, BTRS rejection otherwise), as JAX draws them.

Example:
    >>> import fluxion
    >>> fluxion.random.bernoulli(fluxion.random.key(0), 0.5, (4,)).dtype
    dtype('bool')
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.random import _impls
from fluxion.random._continuous import _gumbel_impl, _gumbel_raw
from fluxion.random._uniform import _uniform_raw
from fluxion.random._util import (
    Shape,
    broadcast_shapes_or_check,
    check_shape,
    const,
    float_dtype,
    int_dtype,
    sampler_jit,
    shape_of,
    shape_tuple,
    split_pair,
    use_key,
)

__all__ = ["bernoulli", "rademacher", "geometric", "categorical", "poisson", "binomial"]


@sampler_jit(static_argnums=(2, 3))
def _bernoulli_impl(kd: Any, p: Any, shape: tuple[int, ...], mode: str) -> Any:
    dtype = np.dtype(p.dtype)
    if mode == "high":
        both = _uniform_raw(kd, (2, *shape), dtype, 0.0, 1.0)
        u1 = lax.reshape(lax.slice_in_dim(both, 0, 1, axis=0), shape)
        u2 = lax.reshape(lax.slice_in_dim(both, 1, 2, axis=0), shape)
        u2 = lax.mul(u2, const(dtype, 2.0 ** -int(dtypes.finfo(dtype).nmant)))
        return jnp.less(u2, jnp.subtract(p, u1))
    return jnp.less(_uniform_raw(kd, shape, dtype, 0.0, 1.0), p)


def bernoulli(key: Any, p: Any = 0.5, shape: Shape | None = None, mode: str = "low", *,
              out_sharding: Any = None) -> Any:
    """Booleans that are True with probability ``p``. ``out_sharding``: the result's sharding
    (explicit mesh axes), as in JAX.

    Example:
        >>> import fluxion
        >>> fluxion.random.bernoulli(fluxion.random.key(0), 0.5, (4,)).dtype
        dtype('bool')
    """
    if out_sharding is not None:
        return with_out_sharding("random.bernoulli", out_sharding, bernoulli, key, p, shape,
                                 mode)
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    kd, _, _ = use_key("bernoulli", key)
    dt = dtypes.dtype(p, canonicalize=True)
    if not dtypes.issubdtype(dt, np.floating):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    p = lax.convert_element_type(p, dt)
    if shape is None:
        shape = shape_of(p)
    else:
        shape = shape_tuple("bernoulli", shape)
        check_shape("bernoulli", shape, shape_of(p))
    return _bernoulli_impl(kd, p, shape, mode)


@sampler_jit(static_argnums=(1, 2))
def _rademacher_impl(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _rademacher_raw(kd, shape, dtype)


def _rademacher_raw(kd: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    pdt = dtypes.default_float_dtype()
    u = _uniform_raw(kd, shape, pdt, 0.0, 1.0)
    b = lax.convert_element_type(lax.lt(u, const(pdt, 0.5)), dtype)
    return lax.sub(lax.mul(const(dtype, 2), b), const(dtype, 1))


def rademacher(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Random signs: -1 or +1 with equal probability (default int dtype).

    Example:
        >>> import fluxion
        >>> set(fluxion.random.rademacher(fluxion.random.key(0), (8,)).tolist()) <= {-1, 1}
        True
    """
    kd, _, _ = use_key("rademacher", key)
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype)
    return _rademacher_impl(kd, shape_tuple("rademacher", shape), dt)


@sampler_jit(static_argnums=(2, 3))
def _geometric_impl(kd: Any, p: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    p = jnp.asarray(p)
    if not dtypes.issubdtype(p.dtype, np.inexact):
        p = p.astype(dtypes.to_inexact_dtype(p.dtype))
    pdt = np.dtype(p.dtype)
    u = _uniform_raw(kd, shape, pdt, 0.0, 1.0)
    u = lax.select(lax.eq(u, const(pdt, 0)), jnp.ones_like(u), u)
    lq = jnp.broadcast_to(lax.log1p(lax.neg(p)), shape)
    g = lax.add(lax.floor(lax.div(lax.log(u), lq)), const(pdt, 1))
    return g.astype(dtype)


def geometric(key: Any, p: Any, shape: Shape | None = None, dtype: Any = None) -> Any:
    """Geometric samples: the number of Bernoulli(p) trials up to the first success.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.geometric(fluxion.random.key(0), 0.3, (5,)) >= 1).all())
        True
    """
    kd, _, _ = use_key("geometric", key)
    dt = int_dtype("geometric", dtype)
    shape = broadcast_shapes_or_check("geometric", shape, p)
    return _geometric_impl(kd, p, shape, dt)


@sampler_jit(static_argnums=(2, 3, 4, 5))
def _categorical_impl(kd: Any, logits: Any, shape: tuple[int, ...], batch_shape: tuple[int, ...],
                      axis: int, mode: str) -> Any:
    prefix = shape[:len(shape) - len(batch_shape)]
    nd = len(logits.shape)
    if axis >= 0:
        axis -= nd
    lshape = list(shape[len(shape) - len(batch_shape):])
    lshape.insert(axis % nd, logits.shape[axis])
    g = _gumbel_raw(kd, (*prefix, *lshape), np.dtype(logits.dtype), mode)
    lg = lax.reshape(logits, (1,) * len(prefix) + tuple(logits.shape)) if prefix else logits
    return jnp.argmax(jnp.add(g, lg), axis=axis)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Shape | None = None,
                replace: bool = True, mode: str | None = None, *,
                out_sharding: Any = None) -> Any:
    """Samples from a categorical distribution with unnormalised log-probabilities ``logits``
    along ``axis`` (the Gumbel-max trick). ``out_sharding``: the result's sharding (explicit
    mesh axes), as in JAX.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.random.categorical(fluxion.random.key(0), jnp.zeros((2, 5))).shape
        (2,)
    """
    if out_sharding is not None:
        return with_out_sharding("random.categorical", out_sharding, categorical, key, logits,
                                 axis, shape, replace, mode)
    kd, _, _ = use_key("categorical", key)
    logits = jnp.asarray(logits)
    nd = logits.ndim
    ax = axis % nd if nd else 0
    batch_shape = tuple(d for i, d in enumerate(logits.shape) if i != ax)
    if shape is None:
        shape = batch_shape
    else:
        shape = shape_tuple("categorical", shape)
        check_shape("categorical", shape, batch_shape)
    mode = "low" if mode is None else mode
    if replace:
        return _categorical_impl(kd, logits, shape, batch_shape, int(axis), mode)
    prefix = shape[:len(shape) - len(batch_shape)]
    k = math.prod(prefix)
    if k > logits.shape[ax]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({logits.shape[ax]}).")
    g = jnp.add(logits, _gumbel_impl(kd, tuple(logits.shape), np.dtype(logits.dtype), mode))
    idx = lax.top_k(jnp.moveaxis(g, ax, -1), k)[1]
    dims = (idx.ndim - 1, *range(idx.ndim - 1))
    return lax.reshape(idx, shape, dims)


def _knuth(kd: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    f32 = np.dtype(np.float32)

    def body(carry: Any) -> Any:
        i, k, rng, log_prod = carry
        rng, sub = split_pair(rng)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, const(dtype, 1)), k)
        u = _uniform_raw(sub, shape, f32, 0.0, 1.0)
        return lax.add(i, np.int32(1)), k, rng, lax.add(log_prod, lax.log(u))

    def cond(carry: Any) -> Any:
        i, log_prod = carry[0], carry[3]
        return lax.bitwise_and(jnp.any(lax.gt(log_prod, lax.neg(lam))),
                               lax.lt(i, np.int32(np.iinfo(np.int32).max)))

    init = (np.int32(0), jnp.zeros(shape, dtype), kd, jnp.zeros(shape, f32))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, const(dtype, 1))


def _poisson_rejection(kd: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry: Any) -> Any:
        i, k_out, accepted, key = carry
        key, s0, s1 = split_pair(key, 3)
        u = _uniform_raw(s0, shape, np.dtype(lam.dtype), 0.0, 1.0) - 0.5
        v = _uniform_raw(s1, shape, np.dtype(lam.dtype), 0.0, 1.0)
        us = 0.5 - abs(u)
        k = lax.floor((2 * a / us + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (us * us) + b))
        tt = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (us >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((us < 0.013) & (v > us))
        accept2 = s <= tt
        accept = accept1 | (~reject & accept2)
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, np.int32(1)), k_out, accepted | accept, key

    def cond(carry: Any) -> Any:
        i, _, accepted, _ = carry
        return lax.bitwise_and(jnp.any(~accepted), lax.lt(i, np.int32(np.iinfo(np.int32).max)))

    init = (np.int32(0), jnp.full(shape, -1, lam.dtype), jnp.full(shape, False, bool), kd)
    k = lax.while_loop(cond, body, init)[1]
    return k.astype(dtype)


@sampler_jit(static_argnums=(2, 3))
def _poisson_impl(kd: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, np.float32(10)))
    lam_k = lax.select(use_knuth, lam, jnp.zeros_like(lam))
    lam_r = lax.select(use_knuth, jnp.full_like(lam, 1e5), lam)
    res = lax.select(use_knuth, _knuth(kd, lam_k, shape, dtype),
                     _poisson_rejection(kd, lam_r, shape, dtype))
    return lax.select(lax.eq(lam, np.float32(0)), jnp.zeros_like(res), res)


def poisson(key: Any, lam: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Poisson samples with rate ``lam`` (Knuth's method below 10, rejection above).

    Example:
        >>> import fluxion
        >>> fluxion.random.poisson(fluxion.random.key(0), 3.0, (4,)).dtype
        dtype('int32')
    """
    kd, _, impl = use_key("poisson", key)
    if impl is not _impls.THREEFRY:
        raise NotImplementedError(f"fluxion.random.poisson is only implemented for the "
                                  f"threefry2x32 PRNG, not {impl.name} (as JAX's)")
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype)
    shape = shape_of(lam) if shape is None else shape_tuple("poisson", shape)
    lam = lax.convert_element_type(jnp.broadcast_to(lam, shape), np.float32)
    return _poisson_impl(kd, lam, shape, dt)


_STIRLING = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
             0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
             0.00925546218271273, 0.00833056343336287)


def _stirling_approx_tail(k: Any) -> Any:
    dt = np.dtype(k.dtype)
    use_tail = k <= 9
    k = lax.clamp(const(dt, 0.0), k, const(dt, 9.0))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    ki = jnp.floor(k).astype(np.int32)
    table = jnp.zeros_like(k)
    for j, v in enumerate(_STIRLING):
        table = lax.select(lax.eq(ki, np.int32(j)), jnp.full_like(k, v), table)
    return lax.select(use_tail, table, approx)


def _binomial_inversion(kd: Any, count: Any, prob: Any, shape: tuple[int, ...],
                        dtype: np.dtype) -> Any:
    log1mp = jnp.log1p(-prob)

    def body(carry: Any) -> Any:
        i, num_geom, geom_sum, key = carry
        sub, key = split_pair(key)
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform_raw(sub, shape, np.dtype(prob.dtype), 0.0, 1.0)
        geom = jnp.ceil(jnp.log(u) / log1mp)
        return lax.add(i, np.int32(1)), num_geom_out, geom_sum + geom, key

    def cond(carry: Any) -> Any:
        return jnp.any(carry[2] <= count) & (carry[0] < np.int32(np.iinfo(np.int32).max))

    z = jnp.zeros(shape, prob.dtype)
    k = lax.while_loop(cond, body, (np.int32(0), z, z, kd))[1]
    return (k - 1).astype(dtype)


def _btrs(kd: Any, count: Any, prob: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry: Any) -> Any:
        i, k_out, accepted, key = carry
        key, s0, s1 = split_pair(key, 3)
        u = _uniform_raw(s0, shape, np.dtype(prob.dtype), 0.0, 1.0)
        v = _uniform_raw(s1, shape, np.dtype(prob.dtype), 0.0, 1.0)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        k_out = lax.select(accept, k, k_out)
        return lax.add(i, np.int32(1)), k_out, accepted | accept, key

    def cond(carry: Any) -> Any:
        return jnp.any(~carry[2]) & (carry[0] < np.int32(np.iinfo(np.int32).max))

    init = (np.int32(0), jnp.full(shape, -1, prob.dtype), jnp.full(shape, False, bool), kd)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


@sampler_jit(static_argnums=(3, 4))
def _binomial_impl(kd: Any, count: Any, prob: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    prob = jnp.asarray(prob)
    if not dtypes.issubdtype(prob.dtype, np.inexact):
        prob = prob.astype(dtypes.to_inexact_dtype(prob.dtype))
    count = jnp.broadcast_to(lax.convert_element_type(count, prob.dtype), shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = jnp.isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, jnp.full_like(q, 0.01), q)
    use_inv = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)
    count_inv = lax.select(use_inv, count, jnp.zeros_like(count))
    count_btrs = lax.select(use_inv, jnp.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inv, jnp.full_like(q, 0.5), q)
    samples = lax.select(use_inv, _binomial_inversion(kd, count_inv, q, shape, dtype),
                         _btrs(kd, count_btrs, q_btrs, shape, dtype))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, jnp.full_like(samples, np.nan), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)


def binomial(key: Any, n: Any, p: Any, shape: Sequence[int] | None = None,
             dtype: Any = None) -> Any:
    """Binomial samples: successes in ``n`` trials of probability ``p`` (float results).

    Example:
        >>> import fluxion
        >>> fluxion.random.binomial(fluxion.random.key(0), 10.0, 0.3, (4,)).shape
        (4,)
    """
    kd, _, _ = use_key("binomial", key)
    dt = float_dtype("binomial", dtype)
    if shape is None:
        shape = tuple(np.broadcast_shapes(shape_of(n), shape_of(p)))
    else:
        shape = shape_tuple("binomial", shape)
        check_shape("binomial", shape, shape_of(n), shape_of(p))
    return _binomial_impl(kd, n, p, shape, dt)
