"""Multivariate samplers: ``multivariate_normal`` and ``orthogonal`` (through
``fluxion.numpy.linalg``), and ``ball`` (uniform points in a p-norm ball).

Example:
    >>> import fluxion
    >>> fluxion.random.orthogonal(fluxion.random.key(0), 3).shape
    (3, 3)
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion.core import dtypes
from fluxion.numpy._util import promote_dtypes_inexact
from fluxion.random._continuous import _exponential_raw
from fluxion.random._gamma import _generalized_normal_raw
from fluxion.random._normal import _normal_impl
from fluxion.random._util import (
    check_shape,
    float_dtype,
    sampler_jit,
    shape_tuple,
    split_pair,
    use_key,
)

__all__ = ["multivariate_normal", "orthogonal", "ball"]


@sampler_jit(static_argnums=(3, 4, 5))
def _multivariate_normal_impl(kd: Any, mean: Any, cov: Any, shape: tuple[int, ...] | None,
                              dtype: np.dtype, method: str) -> Any:
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
        check_shape("normal", shape, tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = _normal_impl(kd, shape + (n,), dtype)
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
    kd, _, _ = use_key("multivariate_normal", key)
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
        shape = shape_tuple("multivariate_normal", shape)
    return _multivariate_normal_impl(kd, mean, cov, shape, dt, method)


@sampler_jit(static_argnums=(1, 2, 3, 4))
def _orthogonal_impl(kd: Any, n: int, m: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    z = _normal_impl(kd, (*shape, max(n, m), min(n, m)), dtype)
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
    mm = n if m is None else m
    shape = shape_tuple("orthogonal", shape)
    kd, _, _ = use_key("orthogonal", key)
    dt = float_dtype("orthogonal", dtype, (np.inexact,))
    try:
        n, mm = operator.index(n), operator.index(mm)
    except TypeError:
        raise TypeError(f"fluxion.random.orthogonal: n and m must be concrete integers, got "
                        f"n={n!r}, m={m!r}") from None
    return _orthogonal_impl(kd, n, mm, shape, dt)


@sampler_jit(static_argnums=(2, 3, 4))
def _ball_impl(kd: Any, p: Any, d: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    k1, k2 = split_pair(kd)
    g = _generalized_normal_raw(k1, p, (*shape, d), dtype)
    e = _exponential_raw(k2, shape, dtype)
    norm = jnp.power(jnp.add(jnp.sum(jnp.power(jnp.abs(g), p), axis=-1), e), jnp.divide(1, p))
    return jnp.divide(g, jnp.expand_dims(norm, -1))


def ball(key: Any, d: int, p: float = 2, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Points drawn uniformly from the unit ``p``-norm ball in ``d`` dimensions.

    Example:
        >>> import fluxion
        >>> fluxion.random.ball(fluxion.random.key(0), 3, shape=(2,)).shape
        (2, 3)
    """
    kd, _, _ = use_key("ball", key)
    dt = float_dtype("ball", dtype)
    return _ball_impl(kd, p, int(d), shape_tuple("ball", shape), dt)
