"""The logistic distribution (mirrors ``jax.scipy.stats.logistic``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import expit, logit
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf", "isf", "rvs"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density -z - 2 log(1 + exp(-z)) - log(scale), computed stably.

    Example:
        >>> float(logpdf(0.0))
        -1.386...
    """
    x, loc, scale = promote("logistic.logpdf", x, loc, scale)
    z = jnp.abs((x - loc) / scale)  # the density is symmetric
    return -z - 2.0 * jnp.log1p(jnp.exp(-z)) - jnp.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Logistic density.

    Example:
        >>> float(pdf(0.0))
        0.25
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Logistic CDF expit(z).

    Example:
        >>> float(cdf(0.0))
        0.5
    """
    x, loc, scale = promote("logistic.cdf", x, loc, scale)
    return expit((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Logistic survival function expit(-z).

    Example:
        >>> float(sf(0.0))
        0.5
    """
    x, loc, scale = promote("logistic.sf", x, loc, scale)
    return expit((loc - x) / scale)


def ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Logistic quantile loc + scale logit(q).

    Example:
        >>> float(ppf(0.5))
        0.0
    """
    x, loc, scale = promote("logistic.ppf", x, loc, scale)
    return loc + scale * logit(x)


def isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Logistic inverse survival function loc - scale logit(q).

    Example:
        >>> float(isf(0.5))
        0.0
    """
    x, loc, scale = promote("logistic.isf", x, loc, scale)
    return loc - scale * logit(x)


def rvs(key: Any, loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None) -> Any:
    """Logistic draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, loc, scale), sample_dtype(dtype, loc, scale)
    return loc + scale * jr.logistic(key, shp, dt)
