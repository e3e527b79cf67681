"""The beta distribution (mirrors ``jax.scipy.stats.beta``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import betainc, betaln, xlog1py, xlogy
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "rvs"]


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density (a-1) log z + (b-1) log(1-z) - log B(a, b) - log(scale) on [0, 1].

    Example:
        >>> round(float(logpdf(0.5, 2.0, 2.0)), 4)
        0.4055
    """
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    z = (x - loc) / scale
    zs = jnp.clip(z, 0.0, 1.0)
    value = xlogy(a - 1.0, zs) + xlog1py(b - 1.0, -zs) - betaln(a, b) - jnp.log(scale)
    return jnp.where((z < 0) | (z > 1), -jnp.inf, value)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Beta density.

    Example:
        >>> float(pdf(0.5, 2.0, 2.0))
        1.5...
    """
    return jnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Beta CDF, the regularised incomplete beta function I_z(a, b).

    Example:
        >>> round(float(cdf(0.5, 2.0, 3.0)), 4)
        0.6875
    """
    x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, jnp.clip((x - loc) / scale, 0.0, 1.0))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the beta CDF.

    Example:
        >>> round(float(logcdf(0.5, 2.0, 3.0)), 4)
        -0.3747
    """
    return jnp.log(cdf(x, a, b, loc, scale))


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Beta survival function I_{1-z}(b, a).

    Example:
        >>> round(float(sf(0.5, 2.0, 3.0)), 4)
        0.3125
    """
    x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, 1.0 - jnp.clip((x - loc) / scale, 0.0, 1.0))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the beta survival function.

    Example:
        >>> round(float(logsf(0.5, 2.0, 3.0)), 4)
        -1.1632
    """
    return jnp.log(sf(x, a, b, loc, scale))


def rvs(key: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1, shape: Any = None,
        dtype: Any = None) -> Any:
    """Beta draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 2.0, 3.0, shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, a, b, loc, scale), sample_dtype(dtype, a, b, loc, scale)
    return loc + scale * jr.beta(key, a, b, shp, dt)
