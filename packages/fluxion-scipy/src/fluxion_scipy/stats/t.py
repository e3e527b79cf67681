"""Student's t distribution (mirrors ``jax.scipy.stats.t``)."""

from __future__ import annotations

import math
from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import gammaln
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpdf", "pdf", "rvs"]


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Log density of Student's t with ``df`` degrees of freedom.

    Example:
        >>> float(logpdf(0.0, 1.0))  # Cauchy at 0
        -1.1447...
    """
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    return (gammaln(0.5 * (df + 1.0)) - gammaln(0.5 * df) - 0.5 * jnp.log(df * math.pi)
            - jnp.log(scale) - 0.5 * (df + 1.0) * jnp.log1p(z * z / df))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Student's t density.

    Example:
        >>> float(pdf(0.0, 1.0))
        0.3183...
    """
    return jnp.exp(logpdf(x, df, loc, scale))


def rvs(key: Any, df: Any, loc: Any = 0, scale: Any = 1, shape: Any = None,
        dtype: Any = None) -> Any:
    """Student's t draws.

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 3.0, shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, df, loc, scale), sample_dtype(dtype, df, loc, scale)
    return loc + scale * jr.t(key, df, shp, dt)
