"""The beta-binomial distribution (mirrors ``jax.scipy.stats.betabinom``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion_scipy.special import betaln, gammaln
from fluxion_scipy.stats._common import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    """Log of C(n, k) B(k + a, n - k + b) / B(a, b) for k - loc in {0..n}; -inf elsewhere.

    Example:
        >>> round(float(logpmf(1, 2, 1.0, 1.0)), 4)  # uniform on {0, 1, 2}
        -1.0986
    """
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = k - loc
    comb = gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)
    value = comb + betaln(y + a, n - y + b) - betaln(a, b)
    value = jnp.where((y < 0) | (y > n), -jnp.inf, value)
    return jnp.where((a <= 0) | (b <= 0) | (n < 0), jnp.nan, value)


def pmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    """Beta-binomial probability mass.

    Example:
        >>> round(float(pmf(1, 2, 1.0, 1.0)), 4)
        0.3333
    """
    return jnp.exp(logpmf(k, n, a, b, loc))
