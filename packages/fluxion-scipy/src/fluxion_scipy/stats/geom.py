"""The geometric distribution on {1, 2, ...} (mirrors ``jax.scipy.stats.geom``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import xlog1py
from fluxion_scipy.stats._common import promote, sample_shape

__all__ = ["logpmf", "pmf", "rvs"]


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """Log of (1 - p)**(k - 1) p for k - loc >= 1; -inf below.

    Example:
        >>> round(float(logpmf(2, 0.5)), 4)
        -1.3863
    """
    k, p, loc = promote("geom.logpmf", k, p, loc)
    x = k - loc
    value = xlog1py(x - 1.0, -p) + jnp.log(p)
    return jnp.where(x < 1, -jnp.inf, value)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """Geometric probability mass.

    Example:
        >>> float(pmf(2, 0.5))
        0.25
    """
    return jnp.exp(logpmf(k, p, loc))


def rvs(key: Any, p: Any, loc: Any = 0, shape: Any = None) -> Any:
    """Geometric draws (integers >= 1, plus ``loc``).

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 0.5, shape=(2,)).shape
        (2,)
    """
    return jr.geometric(key, p, sample_shape(shape, p, loc)) + loc
