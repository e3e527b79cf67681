"""The multinomial distribution over the last axis (mirrors ``jax.scipy.stats.multinomial``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact
from fluxion_scipy.special import gammaln, xlogy

__all__ = ["logpmf", "pmf"]


def logpmf(x: Any, n: Any, p: Any) -> Any:
    """Log of n! prod_i p_i**x_i / x_i! over the last axis; -inf where sum(x) != n.

    Example:
        >>> round(float(logpmf(jnp.array([1.0, 1.0]), 2, jnp.array([0.5, 0.5]))), 4)
        -0.6931
    """
    x, n, p = promote_inexact("multinomial.logpmf", x, n, p)
    if jnp.ndim(x) < 1 or jnp.ndim(p) < 1:
        raise ValueError("multinomial.logpmf: x and p need a last (category) axis, got shapes "
                         f"{jnp.shape(x)} and {jnp.shape(p)}")
    value = gammaln(n + 1.0) + jnp.sum(xlogy(x, p) - gammaln(x + 1.0), axis=-1)
    return jnp.where(jnp.sum(x, axis=-1) != n, -jnp.inf, value)


def pmf(x: Any, n: Any, p: Any) -> Any:
    """Multinomial probability mass.

    Example:
        >>> float(pmf(jnp.array([1.0, 1.0]), 2, jnp.array([0.5, 0.5])))
        0.5...
    """
    return jnp.exp(logpmf(x, n, p))
