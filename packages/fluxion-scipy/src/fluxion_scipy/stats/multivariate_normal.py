"""The multivariate normal distribution (mirrors ``jax.scipy.stats.multivariate_normal``)."""

from __future__ import annotations

import math
from typing import Any

import fluxion.lax.linalg as lax_linalg
import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy._util import promote_inexact

__all__ = ["logpdf", "pdf", "rvs"]


def logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
    """Log density; ``x`` (..., n), ``mean`` (..., n) and ``cov`` (n, n) (scalars for n = 1 too).

    ``allow_singular`` is accepted for SciPy compatibility and must be None or False.

    Example:
        >>> round(float(logpdf(jnp.zeros(2), jnp.zeros(2), jnp.eye(2))), 4)
        -1.8379
    """
    if allow_singular:
        raise NotImplementedError("multivariate_normal.logpdf: allow_singular=True is not supported")
    x, mean, cov = promote_inexact("multivariate_normal.logpdf", x, mean, cov)
    if mean.ndim == 0 or cov.ndim == 0:
        if cov.ndim != 0:
            raise ValueError("multivariate_normal.logpdf: a scalar mean needs a scalar cov, got "
                             f"cov of shape {cov.shape}")
        return (-0.5 * (x - mean) ** 2 / cov - 0.5 * (jnp.log(cov) + math.log(2 * math.pi)))
    n = mean.shape[-1]
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf: cov must have shape (..., {n}, {n}) for a "
                         f"mean of shape {mean.shape}, got {cov.shape}")
    chol = lax_linalg.cholesky(cov)
    diff = x - mean
    batch = jnp.broadcast_shapes(diff.shape[:-1], chol.shape[:-2])
    diff = jnp.broadcast_to(diff, batch + (n,))
    chol = jnp.broadcast_to(chol, batch + (n, n))
    y = lax_linalg.triangular_solve(chol, diff[..., None], left_side=True, lower=True)[..., 0]
    log_det = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(y * y, axis=-1) - log_det - 0.5 * n * math.log(2 * math.pi)


def pdf(x: Any, mean: Any, cov: Any) -> Any:
    """Multivariate normal density.

    Example:
        >>> round(float(pdf(jnp.zeros(2), jnp.zeros(2), jnp.eye(2))), 4)
        0.1592
    """
    return jnp.exp(logpdf(x, mean, cov))


def rvs(key: Any, mean: Any, cov: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Multivariate normal draws of shape ``shape + (n,)``.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), jnp.zeros(2), jnp.eye(2), shape=(3,)).shape
        (3, 2)
    """
    kwargs = {} if dtype is None else {"dtype": dtype}
    return jr.multivariate_normal(key, mean, cov, shape, **kwargs)
