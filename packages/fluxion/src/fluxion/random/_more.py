"""The samplers built on loops, sorting and linear algebra: gamma and its family (Marsaglia-Tsang
rejection in ``lax.while_loop``, as JAX), poisson, binomial, permutation/choice (sort-based
shuffles), multivariate_normal and orthogonal (through ``fluxion.numpy.linalg``).

The gamma sampler draws one key per element (``split(key, a.size)``) and runs JAX's per-element
rejection loop vectorised over all elements, which is what JAX's ``vmap`` of that loop computes:
each element's draws depend only on its own key, so the values equal JAX's.

Example:
    >>> import fluxion
    >>> fluxion.random.gamma(fluxion.random.key(0), 2.0, (3,)).shape
    (3,)
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from fluxion import lax
from fluxion import random as _r
from fluxion.core import dtypes

__all__ = ["ball", "beta", "binomial", "chisquare", "choice", "dirichlet", "f", "gamma",
           "generalized_normal", "loggamma", "multivariate_normal", "orthogonal", "permutation",
           "poisson", "t"]

_jit = _r._jit
_const = _r._const


def _jnp() -> Any:
    import fluxion.numpy as jnp  # noqa: PLC0415
    return jnp


def _select(pred: Any, a: Any, b: Any) -> Any:
    """Elementwise select with ``pred`` broadcast over trailing dimensions of ``a``."""
    pshape = tuple(pred.shape)
    if tuple(a.shape) != pshape:
        pred = lax.broadcast_in_dim(pred, tuple(a.shape), tuple(range(len(pshape))))
    return lax.select(pred, a, b)


# ============================================================================== gamma

def _gamma_batch(keys: Any, alpha: Any, log_space: bool) -> Any:
    """JAX's ``_gamma_one`` for every element: keys ``uint32[n, 2]``, alpha ``[n]``."""
    jnp = _jnp()
    dtype = np.dtype(alpha.dtype)
    c = lambda v: _const(dtype, v)  # noqa: E731
    zero, one = c(0), c(1)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, c(1.0 / 3.0))
    cc = lax.div(c(1.0 / 3.0), lax.sqrt(d))
    n = alpha.shape[0]
    full = lambda v: jnp.full((n,), v, dtype)  # noqa: E731

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
        key2, sub = _r._pair(key)
        x2 = _r._normal_real(sub, (), dtype)
        v2 = lax.add(one, lax.mul(x2, cc))
        return key2, x2, v2

    def body_fn(state: Any) -> Any:
        key = state[0]
        key, x_key, u_key = _r._pair(key, 3)
        _, x, v = _while(inner_cond, inner_body, (x_key, full(0), full(-1)))
        X = lax.mul(x, x)
        V = lax.mul(lax.mul(v, v), v)
        U = _r._uniform_raw(u_key, (), dtype, 0.0, 1.0)
        return key, X, V, U

    key, subkey = _r._pair(keys)
    _, _, V, _ = _while(cond_fn, body_fn, (key, full(0), full(1), full(2)))
    if log_space:
        log_samples = lax.neg(_r._exponential_raw(subkey, (), dtype))
        skip = lax.bitwise_or(boost_mask, lax.eq(log_samples, zero))
        log_boost = lax.select(skip, full(0), lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = lax.sub(one, _r._uniform_raw(subkey, (), dtype, 0.0, 1.0))
    boost = lax.select(boost_mask, full(1), lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _while(cond: Any, body: Any, init: tuple) -> tuple:
    """A while loop over per-element states (leading dimension n): runs while any element's
    ``cond`` holds and updates only those elements, as vmap of a while loop does."""
    def any_cond(state: Any) -> Any:
        return _jnp().any(cond(state))

    def masked_body(state: Any) -> Any:
        pred = cond(state)
        new = body(state)
        return tuple(_select(pred, a, b) for a, b in zip(new, state))

    return lax.while_loop(any_cond, masked_body, tuple(init))


def _gamma_sample_fn(kd: Any, a: Any, log_space: bool) -> Any:
    """Gamma(a) samples (or their logs) of ``a``'s shape, one split key per element."""
    shape = tuple(a.shape)
    n = math.prod(shape)
    keys = lax.reshape(_r._split(kd, n), (n, 2))
    out = _gamma_batch(keys, lax.reshape(a, (n,)), log_space)
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


def _make_gamma_sample() -> Any:
    from fluxion.transforms.custom_derivatives import custom_jvp  # noqa: PLC0415
    f = custom_jvp(_gamma_sample_fn, nondiff_argnums=(2,))
    f.defjvp(_gamma_sample_jvp)
    return f


# Differentiable in ``a`` (the key has no derivative), like JAX's ``random_gamma_p``.
_gamma_sample = _make_gamma_sample()


def _gamma_raw(kd: Any, a: Any, shape: tuple[int, ...], dtype: np.dtype, log_space: bool) -> Any:
    jnp = _jnp()
    a = lax.convert_element_type(a, dtype)
    if tuple(a.shape) != shape:
        a = jnp.broadcast_to(a, shape)
    if math.prod(shape) == 0:
        return jnp.zeros(shape, dtype)
    return _gamma_sample(kd, a, log_space)


@_jit(static_argnums=(2, 3, 4))
def _gamma_impl(kd: Any, a: Any, shape: tuple[int, ...], dtype: np.dtype, log_space: bool) -> Any:
    return _gamma_raw(kd, a, shape, dtype, log_space)


def _gamma_common(name: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool) -> Any:
    kd, _, _ = _r._use(name, key)
    dt = _r._float_dtype("gamma", dtype)
    if shape is None:
        shape = _r._shape_of(a)
    else:
        shape = _r._shape_tuple(name, shape)
        _r._check_shape("gamma", shape, _r._shape_of(a))
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


@_jit(static_argnums=(3, 4))
def _beta_impl(kd: Any, a: Any, b: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    a = jnp.broadcast_to(lax.convert_element_type(a, dtype), shape)
    b = jnp.broadcast_to(lax.convert_element_type(b, dtype), shape)
    ka, kb = _r._pair(kd)
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
    kd, _, _ = _r._use("beta", key)
    dt = _r._float_dtype("beta", dtype)
    _r._check_safe_cast("beta", dt, a, b)
    shape = _r._broadcast_shapes_or_check("beta", shape, a, b)
    return _beta_impl(kd, a, b, shape, dt)


@_jit(static_argnums=(2, 3))
def _dirichlet_impl(kd: Any, alpha: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
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
    kd, _, _ = _r._use("dirichlet", key)
    dt = _r._float_dtype("dirichlet", dtype)
    ashape = _r._shape_of(alpha)
    if len(ashape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(ashape)}")
    if shape is None:
        shape = tuple(ashape[:-1])
    else:
        shape = _r._shape_tuple("dirichlet", shape)
        _r._check_shape("dirichlet", shape, tuple(ashape[:-1]))
    return _dirichlet_impl(kd, _jnp().asarray(alpha), shape, dt)


@_jit(static_argnums=(2, 3))
def _t_impl(kd: Any, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    df = lax.convert_element_type(df, dtype)
    kn, kg = _r._pair(kd)
    nrm = _r._normal_any(kn, shape, dtype)
    half_df = lax.div(df, _const(dtype, 2))
    g = _gamma_raw(kg, half_df, shape, dtype, False)
    return jnp.multiply(nrm, jnp.sqrt(jnp.divide(half_df, g)))


def t(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Student's t samples with ``df`` degrees of freedom.

    Example:
        >>> import fluxion
        >>> fluxion.random.t(fluxion.random.key(0), 3.0, (3,)).shape
        (3,)
    """
    kd, _, _ = _r._use("t", key)
    dt = _r._float_dtype("t", dtype)
    shape = _r._broadcast_shapes_or_check("t", shape, df)
    _r._check_safe_cast("t", dt, df)
    return _t_impl(kd, df, shape, dt)


def _chisquare_raw(kd: Any, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    df = lax.convert_element_type(df, dtype)
    half_df = lax.div(df, _const(dtype, 2))
    log_g = _gamma_raw(kd, half_df, shape, dtype, True)
    return lax.mul(lax.exp(log_g), _const(dtype, 2))


@_jit(static_argnums=(2, 3))
def _chisquare_impl(kd: Any, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _chisquare_raw(kd, df, shape, dtype)


def chisquare(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Chi-square samples with ``df`` degrees of freedom.

    Example:
        >>> import fluxion
        >>> bool((fluxion.random.chisquare(fluxion.random.key(0), 2.0, (3,)) > 0).all())
        True
    """
    kd, _, _ = _r._use("chisquare", key)
    dt = _r._float_dtype("chisquare", dtype)
    shape = _r._broadcast_shapes_or_check("chisquare", shape, df)
    _r._check_safe_cast("chisquare", dt, df)
    return _chisquare_impl(kd, df, shape, dt)


@_jit(static_argnums=(3, 4))
def _f_impl(kd: Any, dfnum: Any, dfden: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    k_den, k_num = _r._pair(kd)
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
    kd, _, _ = _r._use("f", key)
    dt = _r._float_dtype("f", dtype)
    shape = _r._broadcast_shapes_or_check("f", shape, dfnum, dfden)
    _r._check_safe_cast("f", dt, dfnum, dfden)
    return _f_impl(kd, dfnum, dfden, shape, dt)


def _generalized_normal_raw(kd: Any, p: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    k0, k1 = _r._pair(kd)
    inv = jnp.divide(1, p)
    g = _gamma_raw(k0, inv, shape, dtype, False)
    r = _r._rademacher_raw(k1, shape, dtype)
    return jnp.multiply(r, jnp.power(g, inv))


@_jit(static_argnums=(2, 3))
def _generalized_normal_impl(kd: Any, p: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return _generalized_normal_raw(kd, p, shape, dtype)


def generalized_normal(key: Any, p: float, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Generalized normal samples with density proportional to ``exp(-|x|**p)``.

    Example:
        >>> import fluxion
        >>> fluxion.random.generalized_normal(fluxion.random.key(0), 2.0, (3,)).shape
        (3,)
    """
    kd, _, _ = _r._use("generalized_normal", key)
    dt = _r._float_dtype("generalized_normal", dtype)
    return _generalized_normal_impl(kd, p, _r._shape_tuple("generalized_normal", shape), dt)


@_jit(static_argnums=(2, 3, 4))
def _ball_impl(kd: Any, p: Any, d: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    k1, k2 = _r._pair(kd)
    g = _generalized_normal_raw(k1, p, (*shape, d), dtype)
    e = _r._exponential_raw(k2, shape, dtype)
    norm = jnp.power(jnp.add(jnp.sum(jnp.power(jnp.abs(g), p), axis=-1), e), jnp.divide(1, p))
    return jnp.divide(g, jnp.expand_dims(norm, -1))


def ball(key: Any, d: int, p: float = 2, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Points drawn uniformly from the unit ``p``-norm ball in ``d`` dimensions.

    Example:
        >>> import fluxion
        >>> fluxion.random.ball(fluxion.random.key(0), 3, shape=(2,)).shape
        (2, 3)
    """
    kd, _, _ = _r._use("ball", key)
    dt = _r._float_dtype("ball", dtype)
    return _ball_impl(kd, p, int(d), _r._shape_tuple("ball", shape), dt)


# ============================================================================== poisson, binomial

def _knuth(kd: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    f32 = np.dtype(np.float32)

    def body(carry: Any) -> Any:
        i, k, rng, log_prod = carry
        rng, sub = _r._pair(rng)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, _const(dtype, 1)), k)
        u = _r._uniform_raw(sub, shape, f32, 0.0, 1.0)
        return lax.add(i, np.int32(1)), k, rng, lax.add(log_prod, lax.log(u))

    def cond(carry: Any) -> Any:
        i, log_prod = carry[0], carry[3]
        return lax.bitwise_and(jnp.any(lax.gt(log_prod, lax.neg(lam))),
                               lax.lt(i, np.int32(np.iinfo(np.int32).max)))

    init = (np.int32(0), jnp.zeros(shape, dtype), kd, jnp.zeros(shape, f32))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, _const(dtype, 1))


def _poisson_rejection(kd: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry: Any) -> Any:
        i, k_out, accepted, key = carry
        key, s0, s1 = _r._pair(key, 3)
        u = _r._uniform_raw(s0, shape, np.dtype(lam.dtype), 0.0, 1.0) - 0.5
        v = _r._uniform_raw(s1, shape, np.dtype(lam.dtype), 0.0, 1.0)
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


@_jit(static_argnums=(2, 3))
def _poisson_impl(kd: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
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
    jnp = _jnp()
    kd, _, _ = _r._use("poisson", key)
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype)
    shape = _r._shape_of(lam) if shape is None else _r._shape_tuple("poisson", shape)
    lam = lax.convert_element_type(jnp.broadcast_to(lam, shape), np.float32)
    return _poisson_impl(kd, lam, shape, dt)


_STIRLING = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
             0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
             0.00925546218271273, 0.00833056343336287)


def _stirling_approx_tail(k: Any) -> Any:
    jnp = _jnp()
    dt = np.dtype(k.dtype)
    use_tail = k <= 9
    k = lax.clamp(_const(dt, 0.0), k, _const(dt, 9.0))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    ki = jnp.floor(k).astype(np.int32)
    table = jnp.zeros_like(k)
    for j, v in enumerate(_STIRLING):
        table = lax.select(lax.eq(ki, np.int32(j)), jnp.full_like(k, v), table)
    return lax.select(use_tail, table, approx)


def _binomial_inversion(kd: Any, count: Any, prob: Any, shape: tuple[int, ...],
                        dtype: np.dtype) -> Any:
    jnp = _jnp()
    log1mp = jnp.log1p(-prob)

    def body(carry: Any) -> Any:
        i, num_geom, geom_sum, key = carry
        sub, key = _r._pair(key)
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _r._uniform_raw(sub, shape, np.dtype(prob.dtype), 0.0, 1.0)
        geom = jnp.ceil(jnp.log(u) / log1mp)
        return lax.add(i, np.int32(1)), num_geom_out, geom_sum + geom, key

    def cond(carry: Any) -> Any:
        return jnp.any(carry[2] <= count) & (carry[0] < np.int32(np.iinfo(np.int32).max))

    z = jnp.zeros(shape, prob.dtype)
    k = lax.while_loop(cond, body, (np.int32(0), z, z, kd))[1]
    return (k - 1).astype(dtype)


def _btrs(kd: Any, count: Any, prob: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
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
        key, s0, s1 = _r._pair(key, 3)
        u = _r._uniform_raw(s0, shape, np.dtype(prob.dtype), 0.0, 1.0)
        v = _r._uniform_raw(s1, shape, np.dtype(prob.dtype), 0.0, 1.0)
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


@_jit(static_argnums=(3, 4))
def _binomial_impl(kd: Any, count: Any, prob: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
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
    kd, _, _ = _r._use("binomial", key)
    dt = _r._float_dtype("binomial", dtype)
    if shape is None:
        shape = tuple(np.broadcast_shapes(_r._shape_of(n), _r._shape_of(p)))
    else:
        shape = _r._shape_tuple("binomial", shape)
        _r._check_shape("binomial", shape, _r._shape_of(n), _r._shape_of(p))
    return _binomial_impl(kd, n, p, shape, dt)


# ============================================================================== permutation, choice

def _shuffle_raw(kd: Any, x: Any, axis: int) -> Any:
    size = math.prod(x.shape)
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        kd, sub = _r._pair(kd)
        sort_keys = _r._bits(sub, 32, tuple(x.shape))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


@_jit(static_argnums=(2,))
def _shuffle_impl(kd: Any, x: Any, axis: int) -> Any:
    return _shuffle_raw(kd, x, axis)


def _take(arr: Any, ind: Any, axis: int) -> Any:
    jnp = _jnp()
    take = getattr(jnp, "take", None)
    if take is not None:
        return take(arr, ind, axis=axis)
    ind = jnp.asarray(ind)
    nd = arr.ndim
    offset = tuple(range(axis)) + tuple(range(axis + ind.ndim, nd - 1 + ind.ndim))
    dnums = lax.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=(axis,),
                                       start_index_map=(axis,))
    sizes = tuple(1 if i == axis else d for i, d in enumerate(arr.shape))
    return lax.gather(arr, jnp.expand_dims(ind, -1), dnums, sizes, mode="clip")


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (integer ``x``) or of ``x`` along ``axis``
    (``independent=True``: each slice along ``axis`` shuffled independently).

    Example:
        >>> import fluxion
        >>> sorted(fluxion.random.permutation(fluxion.random.key(0), 5).tolist())
        [0, 1, 2, 3, 4]
    """
    jnp = _jnp()
    kd, _, _ = _r._use("permutation", key)
    nd = len(_r._shape_of(x))
    ax = axis % (nd or 1)
    if not nd:
        if not np.issubdtype(dtypes.dtype(x), np.integer):
            raise TypeError("x must be an integer or at least 1-dimensional")
        try:
            r = int(x)
        except Exception:  # noqa: BLE001
            raise TypeError("permutation: argument x must be a concrete integer; it was a "
                            "traced value. Pass an array, or make x static.") from None
        return _shuffle_impl(kd, jnp.arange(r), ax)
    x = jnp.asarray(x)
    if independent or nd == 1:
        return _shuffle_impl(kd, x, ax)
    ind = _shuffle_impl(kd, jnp.arange(x.shape[ax]), 0)
    return _take(x, ind, ax)


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0, mode: str | None = None) -> Any:
    """A random sample of ``a`` (an array, or ``arange(a)`` for an integer) of shape ``shape``,
    with or without replacement, optionally with probabilities ``p``.

    Example:
        >>> import fluxion
        >>> fluxion.random.choice(fluxion.random.key(0), 5, (3,), replace=False).shape
        (3,)
    """
    jnp = _jnp()
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of fluxion.random.choice must be a sequence, got {shape}")
    _r._check_key("choice", key)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(a)
    else:
        axis = axis % arr.ndim
        n_inputs = arr.shape[axis]
    shape = tuple(int(d) for d in shape)
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = _r.randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else _take(arr, ind, axis)
        else:
            perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis)
    else:
        p_arr = jnp.asarray(p)
        if not dtypes.issubdtype(p_arr.dtype, np.inexact):
            p_arr = p_arr.astype(dtypes.to_inexact_dtype(p_arr.dtype))
        if tuple(p_arr.shape) != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {tuple(p_arr.shape)} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = lax.cumsum(p_arr)
            u = _r.uniform(key, shape, dtype=p_cuml.dtype)
            rr = p_cuml[-1] * (1 - u)
            ind = jnp.sum(lax.lt(jnp.expand_dims(p_cuml, tuple(range(len(shape)))),
                                 jnp.expand_dims(rr, -1)).astype(int), axis=-1)
        else:
            g = _r.gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
            ind = lax.top_k(g, n_draws)[1].astype(int)
        result = ind if arr.ndim == 0 else _take(arr, ind, axis)
    return result.reshape(shape if arr.ndim == 0 else
                          tuple(arr.shape[0:axis]) + shape + tuple(arr.shape[axis + 1:]))


# ============================================================================== linear algebra

@_jit(static_argnums=(3, 4, 5))
def _multivariate_normal_impl(kd: Any, mean: Any, cov: Any, shape: tuple[int, ...] | None,
                              dtype: np.dtype, method: str) -> Any:
    jnp = _jnp()
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if tuple(cov.shape[-2:]) != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                         f"got cov.shape == {tuple(cov.shape)}.")
    if shape is None:
        shape = tuple(np.broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2])))
    else:
        _r._check_shape("normal", shape, tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = _r._normal_impl(kd, shape + (n,), dtype)
    draws = jnp.einsum("...ij,...j->...i", factor, z)
    # JAX adds with rank promotion allowed whatever the user's setting: broadcast explicitly.
    out_shape = tuple(np.broadcast_shapes(tuple(mean.shape), tuple(draws.shape)))
    return jnp.add(jnp.broadcast_to(mean, out_shape), jnp.broadcast_to(draws, out_shape))


def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Sequence[int] | None = None,
                        dtype: Any = None, method: str = "cholesky") -> Any:
    """Multivariate normal samples with ``mean`` (..., n) and covariance ``cov`` (..., n, n);
    ``method`` 'cholesky' (default), 'eigh' or 'svd' factors the covariance (use 'eigh' or 'svd'
    for singular covariances). The result has shape ``shape + (n,)`` (default ``shape``: the
    broadcast of the batch shapes of ``mean`` and ``cov``) and the dtype of ``mean`` and ``cov``
    promoted to inexact unless ``dtype`` is given; the values equal ``jax.random``'s.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.random.multivariate_normal(fluxion.random.key(0), jnp.zeros(2),
        ...                                    jnp.eye(2), (3,)).shape
        (3, 2)
    """
    jnp = _jnp()
    kd, _, _ = _r._use("multivariate_normal", key)
    from fluxion.numpy._util import promote_dtypes_inexact  # noqa: PLC0415
    mean, cov = promote_dtypes_inexact(jnp.asarray(mean), jnp.asarray(cov))
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    if dtype is None:
        dt = np.dtype(mean.dtype)
    else:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype)
    if not dtypes.issubdtype(dt, np.floating):
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, got {dt}")
    if shape is not None:
        shape = _r._shape_tuple("multivariate_normal", shape)
    return _multivariate_normal_impl(kd, mean, cov, shape, dt, method)


@_jit(static_argnums=(1, 2, 3, 4))
def _orthogonal_impl(kd: Any, n: int, m: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    jnp = _jnp()
    z = _r._normal_impl(kd, (*shape, max(n, m), min(n, m)), dtype)
    q, r = jnp.linalg.qr(z)
    d = jnp.linalg.diagonal(r)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.linalg.matrix_transpose(x) if n < m else x


def orthogonal(key: Any, n: int, shape: Sequence[int] = (), dtype: Any = None,
               m: int | None = None) -> Any:
    """Random matrices of shape ``shape + (n, m)`` (``m`` defaults to ``n``), uniform (Haar) over
    the orthogonal group O(n) (the unitary group for complex ``dtype``); for ``m != n`` the rows
    (``n < m``) or columns (``n > m``) are orthonormal. Same values as ``jax.random.orthogonal``.

    Example:
        >>> import fluxion
        >>> fluxion.random.orthogonal(fluxion.random.key(0), 3).shape
        (3, 3)
    """
    import operator  # noqa: PLC0415
    mm = n if m is None else m
    shape = _r._shape_tuple("orthogonal", shape)
    kd, _, _ = _r._use("orthogonal", key)
    dt = _r._float_dtype("orthogonal", dtype, (np.inexact,))
    try:
        n, mm = operator.index(n), operator.index(mm)
    except TypeError:
        raise TypeError(f"fluxion.random.orthogonal: n and m must be concrete integers, got "
                        f"n={n!r}, m={m!r}") from None
    return _orthogonal_impl(kd, n, mm, shape, dt)
