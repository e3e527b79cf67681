"""The Pareto distribution with shape ``b`` (mirrors ``jax.scipy.stats.pareto``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "rvs"]


def _z(name: str, x: Any, b: Any, loc: Any, scale: Any) -> tuple:
    x, b, loc, scale = promote(name, x, b, loc, scale)
    return (x - loc) / scale, b, scale


def logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density log(b) - (b + 1) log(z) - log(scale) for z >= 1, -inf below.

    Example:
        >>> float(logpdf(1.0, 2.0))
        0.693...
    """
    z, b, scale = _z("pareto.logpdf", x, b, loc, scale)
    zs = jnp.maximum(z, 1.0)
    return jnp.where(z < 1, -jnp.inf, jnp.log(b) - (b + 1.0) * jnp.log(zs) - jnp.log(scale))


def pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Pareto density.

    Example:
        >>> float(pdf(1.0, 2.0))
        2.0...
    """
    return jnp.exp(logpdf(x, b, loc, scale))


def logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log survival function -b log(z) (0 below the support).

    Example:
        >>> float(logsf(2.0, 1.0))
        -0.693...
    """
    z, b, _ = _z("pareto.logsf", x, b, loc, scale)
    return -b * jnp.log(jnp.maximum(z, 1.0))


def sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Survival function z**-b.

    Example:
        >>> float(sf(2.0, 1.0))
        0.5...
    """
    return jnp.exp(logsf(x, b, loc, scale))


def cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Pareto CDF 1 - z**-b.

    Example:
        >>> float(cdf(2.0, 1.0))
        0.5...
    """
    return -jnp.expm1(logsf(x, b, loc, scale))


def logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the Pareto CDF.

    Example:
        >>> float(logcdf(2.0, 1.0))
        -0.693...
    """
    return jnp.log(cdf(x, b, loc, scale))


def ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Pareto quantile loc + scale (1 - q)**(-1/b).

    Example:
        >>> float(ppf(0.5, 1.0))
        2.0...
    """
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    out = loc + scale * jnp.exp(-jnp.log1p(-q) / b)
    return jnp.where((q < 0) | (q > 1), jnp.nan, out)


def rvs(key: Any, b: Any, loc: Any = 0, scale: Any = 1, shape: Any = None,
        dtype: Any = None) -> Any:
    """Pareto draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 3.0, shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, b, loc, scale), sample_dtype(dtype, b, loc, scale)
    return loc + scale * jr.pareto(key, b, shp, dt)
