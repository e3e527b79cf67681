"""The negative binomial distribution: failures before the n-th success (mirrors
``jax.scipy.stats.nbinom``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion_scipy.special import gammaln, xlog1py, xlogy
from fluxion_scipy.stats._common import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """Log of C(k + n - 1, n - 1) p**n (1 - p)**k for k - loc >= 0; -inf below.

    Example:
        >>> round(float(logpmf(0, 1, 0.5)), 4)
        -0.6931
    """
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    comb = gammaln(n + y) - gammaln(y + 1.0) - gammaln(n)
    value = comb + xlogy(n, p) + xlog1py(y, -p)
    return jnp.where(y < 0, -jnp.inf, value)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """Negative binomial probability mass.

    Example:
        >>> float(pmf(0, 1, 0.5))
        0.5...
    """
    return jnp.exp(logpmf(k, n, p, loc))
