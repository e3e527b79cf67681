"""The binomial distribution (mirrors ``jax.scipy.stats.binom``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import gammaln, xlog1py, xlogy
from fluxion_scipy.stats._common import promote, sample_dtype, sample_shape

__all__ = ["logpmf", "pmf", "rvs"]


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """Log of C(n, k) p**k (1 - p)**(n - k) for k - loc in {0..n}; -inf elsewhere.

    Example:
        >>> round(float(logpmf(1, 2, 0.5)), 4)
        -0.6931
    """
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    comb = gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)
    value = comb + xlogy(y, p) + xlog1py(n - y, -p)
    return jnp.where((y < 0) | (y > n) | (y != jnp.floor(y)), -jnp.inf, value)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """Binomial probability mass.

    Example:
        >>> float(pmf(1, 2, 0.5))
        0.5...
    """
    return jnp.exp(logpmf(k, n, p, loc))


def rvs(key: Any, n: Any, p: Any, loc: Any = 0, shape: Any = None, dtype: Any = None) -> Any:
    """Binomial draws (as floats, as ``fluxion.random.binomial``).

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 10, 0.5, shape=(2,)).shape
        (2,)
    """
    shp, dt = sample_shape(shape, n, p, loc), sample_dtype(dtype, n, p, loc)
    return jr.binomial(key, n, p, shp, dt) + loc
