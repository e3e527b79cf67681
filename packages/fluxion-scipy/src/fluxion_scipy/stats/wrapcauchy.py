"""The wrapped Cauchy distribution on [0, 2 pi] (mirrors ``jax.scipy.stats.wrapcauchy``)."""

from __future__ import annotations

import math
from typing import Any

import fluxion.numpy as jnp
from fluxion_scipy.stats._common import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, c: Any) -> Any:
    """Log density log((1 - c**2) / (2 pi (1 + c**2 - 2 c cos x))) for 0 <= x <= 2 pi, 0 < c < 1.

    Example:
        >>> round(float(logpdf(0.0, 0.5)), 4)
        -0.7393
    """
    x, c = promote("wrapcauchy.logpdf", x, c)
    value = (jnp.log1p(-c * c) - math.log(2.0 * math.pi)
             - jnp.log1p(c * c - 2.0 * c * jnp.cos(x)))
    value = jnp.where((x >= 0) & (x <= 2.0 * math.pi), value, -jnp.inf)
    return jnp.where((c > 0) & (c < 1), value, jnp.nan)


def pdf(x: Any, c: Any) -> Any:
    """Wrapped Cauchy density.

    Example:
        >>> round(float(pdf(0.0, 0.5)), 4)
        0.4775
    """
    return jnp.exp(logpdf(x, c))
