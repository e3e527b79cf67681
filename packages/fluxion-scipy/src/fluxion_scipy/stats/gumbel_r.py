"""The right-skewed (maximum) Gumbel distribution (mirrors ``jax.scipy.stats.gumbel_r``)."""

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
    """Log density -z - exp(-z) - log(scale), z = (x - loc) / scale.

    Example:
        >>> float(logpdf(0.0))
        -1.0
    """
    z, scale = _z("gumbel_r.logpdf", x, loc, scale)
    return -z - jnp.exp(-z) - jnp.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Gumbel density.

    Example:
        >>> float(pdf(0.0))
        0.367...
    """
    return jnp.exp(logpdf(x, loc, scale))


def _log_lower(z: Any) -> Any:
    return -jnp.exp(-z)  # log of exp(-exp(-z))


def _log_upper(z: Any) -> Any:
    return jnp.log(-jnp.expm1(-jnp.exp(-z)))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the Gumbel CDF.

    Example:
        >>> float(logcdf(0.0))
        -1.0
    """
    z, _ = _z("gumbel_r.logcdf", x, loc, scale)
    return _log_lower(z)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the Gumbel survival function.

    Example:
        >>> float(logsf(0.0))
        -0.458...
    """
    z, _ = _z("gumbel_r.logsf", x, loc, scale)
    return _log_upper(z)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Gumbel CDF.

    Example:
        >>> float(cdf(0.0))
        0.367...
    """
    z, _ = _z("gumbel_r.cdf", x, loc, scale)
    return jnp.exp(-jnp.exp(-z))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Gumbel survival function.

    Example:
        >>> float(sf(0.0))
        0.632...
    """
    z, _ = _z("gumbel_r.sf", x, loc, scale)
    return -jnp.expm1(-jnp.exp(-z))


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Gumbel quantile function.

    Example:
        >>> round(float(ppf(0.5)), 4)
        0.3665
    """
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    out = loc - scale * jnp.log(-jnp.log(p))
    return jnp.where((p < 0) | (p > 1), jnp.nan, out)


def rvs(key: Any, loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None) -> Any:
    """Gumbel draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, loc, scale), sample_dtype(dtype, loc, scale)
    return loc + scale * jr.gumbel(key, shp, dt)
