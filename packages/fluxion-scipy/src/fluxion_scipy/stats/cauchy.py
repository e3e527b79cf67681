"""The Cauchy distribution (mirrors ``jax.scipy.stats.cauchy``)."""

from __future__ import annotations

import math
from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf", "rvs"]


def _z(name: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any]:
    x, loc, scale = promote(name, x, loc, scale)
    return (x - loc) / scale, scale


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density -log(pi scale (1 + z**2)).

    Example:
        >>> float(logpdf(0.0))
        -1.1447...
    """
    z, scale = _z("cauchy.logpdf", x, loc, scale)
    return -math.log(math.pi) - jnp.log(scale) - jnp.log1p(z * z)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Cauchy density.

    Example:
        >>> float(pdf(0.0))
        0.3183...
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Cauchy CDF 1/2 + atan(z)/pi.

    Example:
        >>> float(cdf(1.0))
        0.75
    """
    z, _ = _z("cauchy.cdf", x, loc, scale)
    return 0.5 + jnp.arctan(z) / math.pi


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the Cauchy CDF.

    Example:
        >>> float(logcdf(1.0))
        -0.287...
    """
    return jnp.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Cauchy survival function 1/2 - atan(z)/pi.

    Example:
        >>> float(sf(1.0))
        0.25
    """
    z, _ = _z("cauchy.sf", x, loc, scale)
    return 0.5 - jnp.arctan(z) / math.pi


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the Cauchy survival function.

    Example:
        >>> float(logsf(1.0))
        -1.386...
    """
    return jnp.log(sf(x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Cauchy quantile loc + scale tan(pi (q - 1/2)).

    Example:
        >>> float(ppf(0.75))
        1.0...
    """
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    out = loc + scale * jnp.tan(math.pi * (q - 0.5))
    return jnp.where((q < 0) | (q > 1), jnp.nan, out)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Inverse survival function loc + scale tan(pi (1/2 - q)).

    Example:
        >>> float(isf(0.25))
        1.0...
    """
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    out = loc + scale * jnp.tan(math.pi * (0.5 - q))
    return jnp.where((q < 0) | (q > 1), jnp.nan, out)


def rvs(key: Any, loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None) -> Any:
    """Cauchy draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, loc, scale), sample_dtype(dtype, loc, scale)
    return loc + scale * jr.cauchy(key, shp, dt)
