"""The Dirichlet distribution (mirrors ``jax.scipy.stats.dirichlet``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy._util import promote_inexact
from fluxion_scipy.special import gammaln, xlogy

__all__ = ["logpdf", "pdf", "rvs"]


def logpdf(x: Any, alpha: Any) -> Any:
    """Log density of points ``x`` (shape (K,) or (K, N); K - 1 rows imply the last) on the simplex.

    Example:
        >>> round(float(logpdf(jnp.array([0.2, 0.8]), jnp.array([1.0, 1.0]))), 4)
        0.0
    """
    x, alpha = promote_inexact("dirichlet.logpdf", x, alpha)
    if jnp.ndim(alpha) != 1:
        raise ValueError(f"dirichlet.logpdf: alpha must be 1-D, got shape {jnp.shape(alpha)}")
    k = alpha.shape[0]
    if x.shape[0] == k - 1:
        x = jnp.concatenate([x, 1.0 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
    elif x.shape[0] != k:
        raise ValueError(f"dirichlet.logpdf: x must have {k} or {k - 1} rows (the size of alpha), "
                         f"got shape {x.shape}")
    a = alpha.reshape((k,) + (1,) * (x.ndim - 1))
    norm = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
    value = jnp.sum(xlogy(a - 1.0, x), axis=0) - norm
    on_simplex = jnp.all(x >= 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1.0) < 1e-5)
    return jnp.where(on_simplex, value, -jnp.inf)


def pdf(x: Any, alpha: Any) -> Any:
    """Dirichlet density.

    Example:
        >>> round(float(pdf(jnp.array([0.2, 0.8]), jnp.array([1.0, 1.0]))), 4)
        1.0
    """
    return jnp.exp(logpdf(x, alpha))


def rvs(key: Any, alpha: Any, shape: Any = ()) -> Any:
    """Dirichlet draws of shape ``shape + (K,)``.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), jnp.ones(3), shape=(2,)).shape
        (2, 3)
    """
    return jr.dirichlet(key, alpha, tuple(shape) if not isinstance(shape, int) else (shape,))
