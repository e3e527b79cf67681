"""The normal distribution truncated to [a, b] in standard units (mirrors
``jax.scipy.stats.truncnorm``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import log_ndtr
from fluxion_scipy.stats import norm
from fluxion_scipy.stats._common import log_diff_exp, promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "rvs"]


def _log_mass(a: Any, b: Any) -> Any:
    # log(Phi(b) - Phi(a)); on the right of 0 through the upper tails, which keeps the precision.
    right = log_diff_exp(log_ndtr(-a), log_ndtr(-b))
    left = log_diff_exp(log_ndtr(b), log_ndtr(a))
    return jnp.where(a > 0, right, left)


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density: the normal log density renormalised to [a, b] (-inf outside).

    Example:
        >>> round(float(logpdf(0.0, -1.0, 1.0)), 4)
        -0.5372
    """
    x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
    z = (x - loc) / scale
    value = norm.logpdf(z) - jnp.log(scale) - _log_mass(a, b)
    return jnp.where((z < a) | (z > b), -jnp.inf, value)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Truncated normal density.

    Example:
        >>> round(float(pdf(0.0, -1.0, 1.0)), 4)
        0.5844
    """
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the truncated normal CDF.

    Example:
        >>> round(float(logcdf(0.0, -1.0, 1.0)), 4)
        -0.6931
    """
    x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
    z = jnp.clip((x - loc) / scale, a, b)
    value = _log_mass(a, z) - _log_mass(a, b)
    return jnp.where(z <= a, -jnp.inf, jnp.where(z >= b, 0.0, value))


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the truncated normal survival function.

    Example:
        >>> round(float(logsf(0.0, -1.0, 1.0)), 4)
        -0.6931
    """
    x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
    z = jnp.clip((x - loc) / scale, a, b)
    value = _log_mass(z, b) - _log_mass(a, b)
    return jnp.where(z >= b, -jnp.inf, jnp.where(z <= a, 0.0, value))


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Truncated normal CDF.

    Example:
        >>> round(float(cdf(0.0, -1.0, 1.0)), 4)
        0.5
    """
    return jnp.exp(logcdf(x, a, b, loc, scale))


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Truncated normal survival function.

    Example:
        >>> round(float(sf(0.0, -1.0, 1.0)), 4)
        0.5
    """
    return jnp.exp(logsf(x, a, b, loc, scale))


def rvs(key: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1, shape: Any = None,
        dtype: Any = None) -> Any:
    """Truncated normal draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), -1.0, 1.0, shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, a, b, loc, scale), sample_dtype(dtype, a, b, loc, scale)
    return loc + scale * jr.truncated_normal(key, a, b, shp, dt)
