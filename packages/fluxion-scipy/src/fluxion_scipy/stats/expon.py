"""The exponential distribution (mirrors ``jax.scipy.stats.expon``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "rvs"]


def _z(name: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any]:
    x, loc, scale = promote(name, x, loc, scale)
    return (x - loc) / scale, scale


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density of the exponential distribution: -z - log(scale) for z = (x - loc)/scale >= 0.

    Example:
        >>> float(logpdf(1.0))
        -1.0
    """
    z, scale = _z("expon.logpdf", x, loc, scale)
    return jnp.where(z < 0, -jnp.inf, -z - jnp.log(scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Exponential density.

    Example:
        >>> float(pdf(0.0))
        1.0
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Exponential CDF 1 - exp(-z).

    Example:
        >>> float(cdf(1.0))
        0.632...
    """
    z, _ = _z("expon.cdf", x, loc, scale)
    return jnp.where(z < 0, 0.0, -jnp.expm1(-jnp.maximum(z, 0.0))).astype(z.dtype)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the exponential CDF.

    Example:
        >>> float(logcdf(1.0))
        -0.458...
    """
    z, _ = _z("expon.logcdf", x, loc, scale)
    return jnp.where(z < 0, -jnp.inf, jnp.log(-jnp.expm1(-jnp.maximum(z, 0.0))))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Exponential survival function exp(-z).

    Example:
        >>> float(sf(1.0))
        0.367...
    """
    z, _ = _z("expon.sf", x, loc, scale)
    return jnp.exp(-jnp.maximum(z, 0.0))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the exponential survival function, -z.

    Example:
        >>> float(logsf(2.0))
        -2.0
    """
    z, _ = _z("expon.logsf", x, loc, scale)
    return -jnp.maximum(z, 0.0)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Exponential quantile function -log(1 - q) * scale + loc.

    Example:
        >>> float(ppf(0.5))
        0.693...
    """
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    out = -jnp.log1p(-q) * scale + loc
    return jnp.where((q < 0) | (q > 1), jnp.nan, out)


def rvs(key: Any, loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None) -> Any:
    """Exponential draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, loc, scale), sample_dtype(dtype, loc, scale)
    return loc + scale * jr.exponential(key, shp, dt)
