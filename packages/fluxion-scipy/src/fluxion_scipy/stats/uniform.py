"""The continuous uniform distribution on [loc, loc + scale] (mirrors ``jax.scipy.stats.uniform``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "cdf", "ppf", "rvs"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density: -log(scale) inside [loc, loc + scale], -inf outside.

    Example:
        >>> float(logpdf(0.5))
        0.0
    """
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return jnp.where(inside, -jnp.log(scale), -jnp.inf)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Uniform density.

    Example:
        >>> float(pdf(0.5))
        1.0
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Uniform CDF, clip((x - loc)/scale, 0, 1).

    Example:
        >>> float(cdf(0.25))
        0.25
    """
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    return jnp.clip((x - loc) / scale, 0.0, 1.0)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Uniform quantile loc + q scale (nan outside [0, 1]).

    Example:
        >>> float(ppf(0.25, 1.0, 2.0))
        1.5
    """
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return jnp.where((q < 0) | (q > 1), jnp.nan, loc + q * scale)


def rvs(key: Any, loc: Any = 0, scale: Any = 1, shape: Any = None, dtype: Any = None) -> Any:
    """Uniform draws on [loc, loc + scale).

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, loc, scale), sample_dtype(dtype, loc, scale)
    return loc + scale * jr.uniform(key, shp, dt)
