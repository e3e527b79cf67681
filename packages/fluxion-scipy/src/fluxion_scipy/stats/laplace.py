"""The Laplace distribution (mirrors ``jax.scipy.stats.laplace``)."""

from __future__ import annotations

import math
from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "rvs"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density -|z| - log(2 scale).

    Example:
        >>> float(logpdf(0.0))
        -0.693...
    """
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    return -jnp.abs((x - loc) / scale) - jnp.log(scale) - math.log(2.0)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Laplace density.

    Example:
        >>> float(pdf(0.0))
        0.5
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Laplace CDF.

    Example:
        >>> float(cdf(0.0))
        0.5
    """
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(z < 0, 0.5 * jnp.exp(jnp.minimum(z, 0.0)),
                     1.0 - 0.5 * jnp.exp(-jnp.maximum(z, 0.0)))


def rvs(key: Any, loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None) -> Any:
    """Laplace draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, loc, scale), sample_dtype(dtype, loc, scale)
    return loc + scale * jr.laplace(key, shp, dt)
