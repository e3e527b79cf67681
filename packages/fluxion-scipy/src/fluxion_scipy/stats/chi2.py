"""The chi-squared distribution with ``df`` degrees of freedom (mirrors ``jax.scipy.stats.chi2``)."""

from __future__ import annotations

from typing import Any

import fluxion.random as jr
from fluxion_scipy.stats import gamma as _gamma
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "rvs"]


def _as_gamma(name: str, x: Any, df: Any, loc: Any, scale: Any) -> tuple:
    x, df, loc, scale = promote(name, x, df, loc, scale)
    return x, df / 2.0, loc, 2.0 * scale


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density: the gamma density with a = df/2 and scale 2 scale.

    Example:
        >>> float(logpdf(1.0, 2.0))
        -1.193...
    """
    return _gamma.logpdf(*_as_gamma("chi2.logpdf", x, df, loc, scale))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Chi-squared density.

    Example:
        >>> float(pdf(1.0, 2.0))
        0.303...
    """
    return _gamma.pdf(*_as_gamma("chi2.pdf", x, df, loc, scale))


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Chi-squared CDF.

    Example:
        >>> float(cdf(2.0, 2.0))
        0.632...
    """
    return _gamma.cdf(*_as_gamma("chi2.cdf", x, df, loc, scale))


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the chi-squared CDF.

    Example:
        >>> float(logcdf(2.0, 2.0))
        -0.458...
    """
    return _gamma.logcdf(*_as_gamma("chi2.logcdf", x, df, loc, scale))


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Chi-squared survival function.

    Example:
        >>> float(sf(2.0, 2.0))
        0.367...
    """
    return _gamma.sf(*_as_gamma("chi2.sf", x, df, loc, scale))


def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log of the chi-squared survival function.

    Example:
        >>> float(logsf(2.0, 2.0))
        -1.0...
    """
    return _gamma.logsf(*_as_gamma("chi2.logsf", x, df, loc, scale))


def rvs(key: Any, df: Any, loc: Any = 0, scale: Any = 1, shape: Any = None,
        dtype: Any = None) -> Any:
    """Chi-squared draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 3.0, shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, df, loc, scale), sample_dtype(dtype, df, loc, scale)
    return loc + scale * jr.chisquare(key, df, shp, dt)
