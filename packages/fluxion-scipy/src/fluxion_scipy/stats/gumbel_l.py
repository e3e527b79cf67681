"""The left-skewed (minimum) Gumbel distribution (mirrors ``jax.scipy.stats.gumbel_l``).

``gumbel_l`` is ``gumbel_r`` reflected about ``loc``: each function here reflects its argument
(``x -> -x``, ``loc -> -loc``) and calls the matching ``gumbel_r`` function (the lower tail of one
is the upper tail of the other).
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.stats import gumbel_r as _r
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "rvs"]


def _reflected(name: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
    x, loc, scale = promote(name, x, loc, scale)
    return -x, -loc, scale


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density z - exp(z) - log(scale), z = (x - loc) / scale.

    Example:
        >>> float(logpdf(0.0))
        -1.0
    """
    return _r.logpdf(*_reflected("gumbel_l.logpdf", x, loc, scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Gumbel (minimum) density.

    Example:
        >>> float(pdf(0.0))
        0.367...
    """
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the CDF: the reflected ``gumbel_r.logsf``.

    Example:
        >>> float(logcdf(0.0))
        -0.458...
    """
    return _r.logsf(*_reflected("gumbel_l.logcdf", x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the survival function: the reflected ``gumbel_r.logcdf``.

    Example:
        >>> float(logsf(0.0))
        -1.0
    """
    return _r.logcdf(*_reflected("gumbel_l.logsf", x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """CDF: the reflected ``gumbel_r.sf``.

    Example:
        >>> float(cdf(0.0))
        0.632...
    """
    return _r.sf(*_reflected("gumbel_l.cdf", x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Survival function: the reflected ``gumbel_r.cdf``.

    Example:
        >>> float(sf(0.0))
        0.367...
    """
    return _r.cdf(*_reflected("gumbel_l.sf", x, loc, scale))


def ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Quantile function ``loc + scale * log(-log1p(-p))`` (log1p keeps small ``p`` exact).

    Example:
        >>> round(float(ppf(0.5)), 4)
        -0.3665
    """
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    out = loc + scale * jnp.log(-jnp.log1p(-p))
    return jnp.where((p < 0) | (p > 1), jnp.nan, out)


def rvs(key: Any, loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None) -> Any:
    """Gumbel (minimum) draws: ``loc - scale * G`` with ``G`` standard Gumbel (maximum).

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, loc, scale), sample_dtype(dtype, loc, scale)
    return loc - scale * jr.gumbel(key, shp, dt)
