"""The gamma family: ``gamma`` and ``loggamma`` (Marsaglia-Tsang rejection in
``lax.while_loop``, as JAX), and the distributions built on gamma draws: ``beta``, ``dirichlet``,
``chisquare``, ``t``, ``f`` and ``generalized_normal``.

The gamma sampler draws one key per element (``split(key, a.size)``) and runs JAX's per-element
rejection loop vectorised over all elements, which is what JAX's ``vmap`` of that loop computes:
each element's draws depend only on its own key, so the values equal JAX's. Samples are
differentiable in ``a`` (implicit reparameterisation), like JAX's ``random_gamma_p``.

Example:
    >>> import fluxion
    >>> fluxion.random.gamma(fluxion.random.key(0), 2.0, (3,)).shape
    (3,)
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.random import _impls
from fluxion.random._continuous import _exponential_raw
from fluxion.random._discrete import _rademacher_raw
from fluxion.random._keys import PRNGKeyArray
from fluxion.random._normal import _normal_any, _normal_real
from fluxion.random._uniform import _uniform_raw
from fluxion.random._util import (
    as_typed,
    broadcast_shapes_or_check,
    check_safe_cast,
    check_shape,
    const,
    float_dtype,
    sampler_jit,
    shape_of,
    shape_tuple,
    split_keys,
    split_pair,
    use_key,
)
from fluxion.transforms.custom_derivatives import custom_jvp

__all__ = ["gamma", "loggamma", "beta", "dirichlet", "chisquare", "t", "f", "generalized_normal"]


def _select(pred: Any, a: Any, b: Any) -> Any:
    """Elementwise select with ``pred`` broadcast over trailing dimensions of ``a`` (key arrays:
    over their key data)."""
    if isinstance(a, PRNGKeyArray):
        return as_typed(a._impl, _select(pred, a._base_array, b._base_array))
    pshape = tuple(pred.shape)
    if tuple(a.shape) != pshape:
        pred = lax.broadcast_in_dim(pred, tuple(a.shape), tuple(range(len(pshape))))
    return lax.select(pred, a, b)


def _gamma_batch(keys: Any, alpha: Any, log_space: bool) -> Any:
    """JAX's ``_gamma_one`` for every element: keys ``uint32[n, 2]``, alpha ``[n]``."""
    dtype = np.dtype(alpha.dtype)
    c = lambda v: const(dtype, v)
    zero, one = c(0), c(1)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, c(1.0 / 3.0))
    cc = lax.div(c(1.0 / 3.0), lax.sqrt(d))
    n = alpha.shape[0]
    full = lambda v: jnp.full((n,), v, dtype)

    def cond_fn(state: Any) -> Any:
        _, X, V, U = state
        return lax.bitwise_and(
            lax.ge(U, lax.sub(one, lax.mul(c(0.0331), lax.mul(X, X)))),
            lax.ge(lax.log(U), lax.add(lax.mul(X, c(0.5)),
                                       lax.mul(d, lax.add(lax.sub(one, V), lax.log(V))))))

    def inner_cond(kxv: Any) -> Any:
        return lax.le(kxv[2], zero)

    def inner_body(kxv: Any) -> Any:
        key, x, v = kxv
        key2, sub = split_pair(key)
        x2 = _normal_real(sub, (), dtype)
        v2 = lax.add(one, lax.mul(x2, cc))
        return key2, x2, v2

    def body_fn(state: Any) -> Any:
        key = state[0]
        key, x_key, u_key = split_pair(key, 3)
        _, x, v = _while(inner_cond, inner_body, (x_key, full(0), full(-1)))
        X = lax.mul(x, x)
        V = lax.mul(lax.mul(v, v), v)
        U = _uniform_raw(u_key, (), dtype, 0.0, 1.0)
        return key, X, V, U

    key, subkey = split_pair(keys)
    _, _, V, _ = _while(cond_fn, body_fn, (key, full(0), full(1), full(2)))
    if log_space:
        log_samples = lax.neg(_exponential_raw(subkey, (), dtype))
        skip = lax.bitwise_or(boost_mask, lax.eq(log_samples, zero))
        log_boost = lax.select(skip, full(0), lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = lax.sub(one, _uniform_raw(subkey, (), dtype, 0.0, 1.0))
    boost = lax.select(boost_mask, full(1), lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _while(cond: Any, body: Any, init: tuple) -> tuple:
    """A while loop over per-element states (leading dimension n): runs while any element's
    ``cond`` holds and updates only those elements, as vmap of a while loop does."""
    def any_cond(state: Any) -> Any:
        return jnp.any(cond(state))

    def masked_body(state: Any) -> Any:
        pred = cond(state)
        new = body(state)
        return tuple(_select(pred, a, b) for a, b in zip(new, state))

    return lax.while_loop(any_cond, masked_body, tuple(init))


def _gamma_sample_fn(kd: Any, a: Any, log_space: bool) -> Any:
    """Gamma(a) samples (or their logs) of ``a``'s shape, one split key per element."""
    shape = tuple(a.shape)
    n = math.prod(shape)
    keys = split_keys(kd, n)
    alphas = lax.reshape(a, (n,))
    if kd._impl is _impls.THREEFRY:
        out = _gamma_batch(keys, alphas, log_space)
    else:
        # Other implementations draw element by element (JAX's lax.map): an rbg key batch
        # would draw every element's bits from its first key.
        out = lax.map(lambda ka: lax.reshape(
            _gamma_batch(ka[0].reshape(1), lax.reshape(ka[1], (1,)), log_space), ()),
            (keys, alphas))
    return lax.reshape(out, shape)


def _gamma_sample_grad(sample: Any, a: Any, log_space: bool) -> Any:
    """d sample / d a at fixed noise (implicit reparameterisation, ``lax.random_gamma_grad``);
    in log space ``d log(x) = dx / x``, with an underflowed ``x = 0`` taken as the tiniest
    normal float, as JAX does."""
    if not log_space:
        return lax.random_gamma_grad(a, sample)
    dtype = np.dtype(sample.dtype)
    x = lax.exp(sample)
    tiny = lax.full_like(x, dtypes.finfo(dtype).tiny)
    x = lax.select(lax.eq(x, lax.full_like(x, 0)), tiny, x)
    return lax.div(lax.random_gamma_grad(a, x), x)


def _gamma_sample_jvp(log_space: bool, primals: tuple, tangents: tuple) -> tuple:
    kd, a = primals
    out = _gamma_sample_fn(kd, a, log_space)
    return out, lax.mul(tangents[1], _gamma_sample_grad(out, a, log_space))


# Differentiable in ``a`` (the key has no derivative), like JAX's ``random_gamma_p``.
_gamma_sample = custom_jvp(_gamma_sample_fn, nondiff_argnums=(2,))
_gamma_sample.defjvp(_gamma_sample_jvp)


def _gamma_raw(kd: Any, a: Any, shape: tuple[int, ...], dtype: np.dtype, log_space: bool) -> Any:
    a = lax.convert_element_type(a, dtype)
    if tuple(a.shape) != shape:
        a = jnp.broadcast_to(a, shape)
    if math.prod(shape) == 0:
        return jnp.zeros(shape, dtype)
    return _gamma_sample(kd, a, log_space)


@sampler_jit(static_argnums=(2, 3, 4))
def _gamma_impl(kd: Any, a: Any, shape: tuple[int, ...], dtype: np.dtype, log_space: bool) -> Any:
    return _gamma_raw(kd, a, shape, dtype, log_space)


def _gamma_common(name: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool) -> Any:
    kd, _, _ = use_key(name, key)
    dt = float_dtype("gamma", dtype)
    if shape is None:
        shape = shape_of(a)
    else:
        shape = shape_tuple(name, shape)
        check_shape("gamma", shape, shape_of(a))
    return _gamma_impl(kd, a, shape, dt, log_space)


def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Gamma samples with concentration ``a`` (unit scale), by Marsaglia-Tsang rejection.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.gamma(fluxion.random.key(0), 2.0, (4,)) > 0).all())
        True
    """
    return _gamma_common("gamma", key, a, shape, dtype, False)


def loggamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Logarithms of gamma samples, accurate for small ``a`` (where samples underflow).

    Example:
        >>> import fluxion
        >>> fluxion.random.loggamma(fluxion.random.key(0), 0.1, (3,)).shape
        (3,)
    """
    return _gamma_common("loggamma", key, a, shape, dtype, True)


@sampler_jit(static_argnums=(3, 4))
def _beta_impl(kd: Any, a: Any, b: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    a = jnp.broadcast_to(lax.convert_element_type(a, dtype), shape)
    b = jnp.broadcast_to(lax.convert_element_type(b, dtype), shape)
    ka, kb = split_pair(kd)
    lga = _gamma_raw(ka, a, shape, dtype, True)
    lgb = _gamma_raw(kb, b, shape, dtype, True)
    lmax = lax.max(lga, lgb)
    ga = lax.exp(lax.sub(lga, lmax))
    gb = lax.exp(lax.sub(lgb, lmax))
    return lax.div(ga, lax.add(ga, gb))


def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Beta(a, b) samples.

    Example:
        >>> import fluxion
        >>> x = fluxion.random.beta(fluxion.random.key(0), 2.0, 3.0, (4,))
        >>> bool(((x > 0) & (x < 1)).all())
        True
    """
    kd, _, _ = use_key("beta", key)
    dt = float_dtype("beta", dtype)
    check_safe_cast("beta", dt, a, b)
    shape = broadcast_shapes_or_check("beta", shape, a, b)
    return _beta_impl(kd, a, b, shape, dt)


@sampler_jit(static_argnums=(2, 3))
def _dirichlet_impl(kd: Any, alpha: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    alpha = lax.convert_element_type(alpha, dtype)
    full = shape + tuple(alpha.shape[-1:])
    lg = _gamma_raw(kd, alpha, full, dtype, True)
    m = jnp.max(lg, axis=-1, keepdims=True)
    un = lax.exp(lax.sub(lg, jnp.broadcast_to(m, full)))
    return lax.div(un, jnp.broadcast_to(jnp.sum(un, axis=-1, keepdims=True), full))


def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Dirichlet samples with concentrations ``alpha`` (last axis); rows sum to one.

    Example:
        >>> import fluxion
        >>> fluxion.random.dirichlet(fluxion.random.key(0), [1.0, 2.0, 3.0]).shape
        (3,)
    """
    kd, _, _ = use_key("dirichlet", key)
    dt = float_dtype("dirichlet", dtype)
    ashape = shape_of(alpha)
    if len(ashape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(ashape)}")
    if shape is None:
        shape = tuple(ashape[:-1])
    else:
        shape = shape_tuple("dirichlet", shape)
        check_shape("dirichlet", shape, tuple(ashape[:-1]))
    return _dirichlet_impl(kd, jnp.asarray(alpha), shape, dt)


@sampler_jit(static_argnums=(2, 3))
def _t_impl(kd: Any, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    df = lax.convert_element_type(df, dtype)
    kn, kg = split_pair(kd)
    nrm = _normal_any(kn, shape, dtype)
    half_df = lax.div(df, const(dtype, 2))
    g = _gamma_raw(kg, half_df, shape, dtype, False)
    return jnp.multiply(nrm, jnp.sqrt(jnp.divide(half_df, g)))


def t(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Student's t samples with ``df`` degrees of freedom.

    Example:
        >>> import fluxion
        >>> fluxion.random.t(fluxion.random.key(0), 3.0, (3,)).shape
        (3,)
    """
    kd, _, _ = use_key("t", key)
    dt = float_dtype("t", dtype)
    shape = broadcast_shapes_or_check("t", shape, df)
    check_safe_cast("t", dt, df)
    return _t_impl(kd, df, shape, dt)


def _chisquare_raw(kd: Any, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    df = lax.convert_element_type(df, dtype)
    half_df = lax.div(df, const(dtype, 2))
    log_g = _gamma_raw(kd, half_df, shape, dtype, True)
    return lax.mul(lax.exp(log_g), const(dtype, 2))


@sampler_jit(static_argnums=(2, 3))
def _chisquare_impl(kd: Any, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _chisquare_raw(kd, df, shape, dtype)


def chisquare(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Chi-square samples with ``df`` degrees of freedom.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.chisquare(fluxion.random.key(0), 2.0, (3,)) > 0).all())
        True
    """
    kd, _, _ = use_key("chisquare", key)
    dt = float_dtype("chisquare", dtype)
    shape = broadcast_shapes_or_check("chisquare", shape, df)
    check_safe_cast("chisquare", dt, df)
    return _chisquare_impl(kd, df, shape, dt)


@sampler_jit(static_argnums=(3, 4))
def _f_impl(kd: Any, dfnum: Any, dfden: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    k_den, k_num = split_pair(kd)
    c_num = _chisquare_raw(k_num, dfnum, shape, dtype)
    c_den = _chisquare_raw(k_den, dfden, shape, dtype)
    return jnp.divide(jnp.divide(c_num, dfnum), jnp.divide(c_den, dfden))


def f(key: Any, dfnum: Any, dfden: Any, shape: Sequence[int] | None = None,
      dtype: Any = None) -> Any:
    """F-distribution samples with ``dfnum`` and ``dfden`` degrees of freedom.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.f(fluxion.random.key(0), 2.0, 3.0, (3,)) > 0).all())
        True
    """
    kd, _, _ = use_key("f", key)
    dt = float_dtype("f", dtype)
    shape = broadcast_shapes_or_check("f", shape, dfnum, dfden)
    check_safe_cast("f", dt, dfnum, dfden)
    return _f_impl(kd, dfnum, dfden, shape, dt)


def _generalized_normal_raw(kd: Any, p: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    k0, k1 = split_pair(kd)
    inv = jnp.divide(1, p)
    g = _gamma_raw(k0, inv, shape, dtype, False)
    r = _rademacher_raw(k1, shape, dtype)
    return jnp.multiply(r, jnp.power(g, inv))


@sampler_jit(static_argnums=(2, 3))
def _generalized_normal_impl(kd: Any, p: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _generalized_normal_raw(kd, p, shape, dtype)


def generalized_normal(key: Any, p: float, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Generalized normal samples with density proportional to ``exp(-|x|**p)``.

    Example:
        >>> import fluxion
        >>> fluxion.random.generalized_normal(fluxion.random.key(0), 2.0, (3,)).shape
        (3,)
    """
    kd, _, _ = use_key("generalized_normal", key)
    dt = float_dtype("generalized_normal", dtype)
    return _generalized_normal_impl(kd, p, shape_tuple("generalized_normal", shape), dt)
