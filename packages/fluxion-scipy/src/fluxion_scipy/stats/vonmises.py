"""The von Mises distribution on the circle (mirrors ``jax.scipy.stats.vonmises``)."""

from __future__ import annotations

import math
from typing import Any

import fluxion.numpy as jnp
from fluxion_scipy.special import i0e
from fluxion_scipy.stats._common import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, kappa: Any) -> Any:
    """Log density kappa (cos x - 1) - log(2 pi i0e(kappa)); nan for kappa <= 0.

    Example:
        >>> float(logpdf(0.0, 1.0))
        -1.0737...
    """
    x, kappa = promote("vonmises.logpdf", x, kappa)
    value = kappa * (jnp.cos(x) - 1.0) - math.log(2.0 * math.pi) - jnp.log(i0e(kappa))
    return jnp.where(kappa > 0, value, jnp.nan)


def pdf(x: Any, kappa: Any) -> Any:
    """Von Mises density.

    Example:
        >>> float(pdf(0.0, 1.0))
        0.3417...
    """
    return jnp.exp(logpdf(x, kappa))
