"""The normal distribution (mirrors ``jax.scipy.stats.norm``)."""

from __future__ import annotations

import math
from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import log_ndtr, ndtr, ndtri
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf", "rvs"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the normal density with mean ``loc`` and standard deviation ``scale``.

    Example:
        >>> float(logpdf(0.0))
        -0.9189...
    """
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * z * z - jnp.log(scale) - 0.5 * math.log(2 * math.pi)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Normal density.

    Example:
        >>> float(pdf(0.0))
        0.3989...
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Normal cumulative distribution function.

    Example:
        >>> float(cdf(0.0))
        0.5
    """
    x, loc, scale = promote("norm.cdf", x, loc, scale)
    return ndtr((x - loc) / scale)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the normal CDF, accurate far into the left tail.

    Example:
        >>> float(logcdf(-20.0))
        -203.9...
    """
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return log_ndtr((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Normal survival function 1 - cdf.

    Example:
        >>> float(sf(0.0))
        0.5
    """
    x, loc, scale = promote("norm.sf", x, loc, scale)
    return ndtr((loc - x) / scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the normal survival function.

    Example:
        >>> float(logsf(20.0))
        -203.9...
    """
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return log_ndtr((loc - x) / scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Normal quantile function (inverse CDF).

    Example:
        >>> float(ppf(0.5))
        0.0
    """
    q, loc, scale = promote("norm.ppf", q, loc, scale)
    return ndtri(q) * scale + loc


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Inverse survival function: the x with sf(x) = q.

    Example:
        >>> float(isf(0.5))
        0.0
    """
    q, loc, scale = promote("norm.isf", q, loc, scale)
    return loc - ndtri(q) * scale


def rvs(key: Any, loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None) -> Any:
    """Normal draws with ``fluxion.random``; ``shape`` defaults to the parameters' shape.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 1.0, 2.0, shape=(3,)).shape
        (3,)
    """
    shp, dt = sample_shape(shape, loc, scale), sample_dtype(dtype, loc, scale)
    return loc + scale * jr.normal(key, shp, dt)
