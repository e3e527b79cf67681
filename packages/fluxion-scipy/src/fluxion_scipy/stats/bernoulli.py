"""The Bernoulli distribution (mirrors ``jax.scipy.stats.bernoulli``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import xlog1py, xlogy
from fluxion_scipy.stats._common import promote, sample_shape

__all__ = ["logpmf", "pmf", "cdf", "ppf", "rvs"]


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """Log probability of k - loc in {0, 1}: log(p) or log(1 - p); -inf elsewhere.

    Example:
        >>> round(float(logpmf(1, 0.25)), 4)
        -1.3863
    """
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = k - loc
    value = xlogy(x, p) + xlog1py(1.0 - x, -p)
    return jnp.where((x != 0) & (x != 1), -jnp.inf, value)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """Bernoulli probability mass.

    Example:
        >>> float(pmf(1, 0.25))
        0.25
    """
    return jnp.exp(logpmf(k, p, loc))


def cdf(k: Any, p: Any) -> Any:
    """Bernoulli CDF: 0 below 0, 1 - p on [0, 1), 1 from 1; nan for p outside [0, 1].

    Example:
        >>> float(cdf(0, 0.25))
        0.75
    """
    k, p = promote("bernoulli.cdf", k, p)
    value = jnp.where(k < 0, 0.0, jnp.where(k >= 1, 1.0, 1.0 - p))
    return jnp.where((p < 0) | (p > 1) | jnp.isnan(k), jnp.nan, value)


def ppf(q: Any, p: Any) -> Any:
    """Bernoulli quantile: 0 for q <= 1 - p, else 1; nan outside [0, 1].

    Example:
        >>> float(ppf(0.9, 0.25))
        1.0
    """
    q, p = promote("bernoulli.ppf", q, p)
    value = jnp.where(q <= 1.0 - p, 0.0, 1.0)
    return jnp.where((q < 0) | (q > 1) | (p < 0) | (p > 1), jnp.nan, value)


def rvs(key: Any, p: Any, loc: Any = 0, shape: Any = None) -> Any:
    """Bernoulli draws (as integers 0/1 plus ``loc``).

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 0.5, shape=(3,)).shape
        (3,)
    """
    shp = sample_shape(shape, p, loc)
    return jr.bernoulli(key, p, shp).astype(jnp.int32) + loc
