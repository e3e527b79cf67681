"""The gamma distribution with shape ``a`` (mirrors ``jax.scipy.stats.gamma``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import gammainc, gammaincc, gammaln, xlogy
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "rvs"]


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density (a - 1) log z - z - gammaln(a) - log(scale), z = (x - loc)/scale >= 0.

    Example:
        >>> float(logpdf(1.0, 1.0))
        -1.0
    """
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    z = (x - loc) / scale
    zs = jnp.where(z >= 0, z, 1.0)
    value = xlogy(a - 1.0, zs) - zs - gammaln(a) - jnp.log(scale)
    return jnp.where(z < 0, -jnp.inf, value)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Gamma density.

    Example:
        >>> float(pdf(1.0, 1.0))
        0.367...
    """
    return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Gamma CDF, the regularised lower incomplete gamma function P(a, z).

    Example:
        >>> float(cdf(1.0, 1.0))
        0.632...
    """
    x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
    return gammainc(a, jnp.maximum((x - loc) / scale, 0.0))


def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the gamma CDF.

    Example:
        >>> float(logcdf(1.0, 1.0))
        -0.458...
    """
    return jnp.log(cdf(x, a, loc, scale))


def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Gamma survival function Q(a, z).

    Example:
        >>> float(sf(1.0, 1.0))
        0.367...
    """
    x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
    return gammaincc(a, jnp.maximum((x - loc) / scale, 0.0))


def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the gamma survival function.

    Example:
        >>> float(logsf(1.0, 1.0))
        -1.0...
    """
    return jnp.log(sf(x, a, loc, scale))


def rvs(key: Any, a: Any, loc: Any = 0, scale: Any = 1, shape: Any = None,
        dtype: Any = None) -> Any:
    """Gamma draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 2.0, shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, a, loc, scale), sample_dtype(dtype, a, loc, scale)
    return loc + scale * jr.gamma(key, jnp.broadcast_to(jnp.asarray(a, dt), shp), shp, dt)
