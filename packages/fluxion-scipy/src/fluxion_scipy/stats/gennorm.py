"""The generalized normal distribution with shape ``beta`` (mirrors ``jax.scipy.stats.gennorm``)."""

from __future__ import annotations

import math
from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import gammainc, gammaln
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "rvs"]


def logpdf(x: Any, beta: Any) -> Any:
    """Log density log(beta / (2 gamma(1/beta))) - |x|**beta.

    Example:
        >>> float(logpdf(0.0, 2.0))
        -0.572...
    """
    x, beta = promote("gennorm.logpdf", x, beta)
    return jnp.log(beta) - math.log(2.0) - gammaln(1.0 / beta) - jnp.abs(x) ** beta


def pdf(x: Any, beta: Any) -> Any:
    """Generalized normal density.

    Example:
        >>> float(pdf(0.0, 2.0))
        0.564...
    """
    return jnp.exp(logpdf(x, beta))


def cdf(x: Any, beta: Any) -> Any:
    """Generalized normal CDF 1/2 + sign(x) P(1/beta, |x|**beta) / 2.

    Example:
        >>> float(cdf(0.0, 2.0))
        0.5
    """
    x, beta = promote("gennorm.cdf", x, beta)
    return 0.5 + 0.5 * jnp.sign(x) * gammainc(1.0 / beta, jnp.abs(x) ** beta)


def rvs(key: Any, beta: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Generalized normal draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 2.0, shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, beta), sample_dtype(dtype, beta)
    return jr.generalized_normal(key, beta, shp, dt)
