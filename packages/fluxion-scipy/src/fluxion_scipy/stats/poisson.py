"""The Poisson distribution (mirrors ``jax.scipy.stats.poisson``)."""

from __future__ import annotations

import math
from typing import Any

import fluxion.numpy as jnp
import fluxion.random as jr
from fluxion_scipy.special import gammaincc, gammaln, xlogy
from fluxion_scipy.stats._common import promote, sample_shape

__all__ = ["logpmf", "pmf", "cdf", "entropy", "rvs"]


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """Log of mu**k exp(-mu) / k! for integer k - loc >= 0; -inf elsewhere.

    Example:
        >>> round(float(logpmf(0, 2.0)), 4)
        -2.0
    """
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = k - loc
    value = xlogy(x, mu) - gammaln(x + 1.0) - mu
    return jnp.where((x < 0) | (x != jnp.round(x)), -jnp.inf, value)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """Poisson probability mass.

    Example:
        >>> round(float(pmf(0, 2.0)), 4)
        0.1353
    """
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """Poisson CDF Q(floor(k - loc) + 1, mu).

    Example:
        >>> round(float(cdf(0, 2.0)), 4)
        0.1353
    """
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    x = k - loc
    return jnp.where(x < 0, 0.0, gammaincc(jnp.floor(jnp.maximum(x, 0.0)) + 1.0, mu))


_ENTROPY_TERMS = 400


def entropy(mu: Any, loc: Any = 0) -> Any:
    """Shannon entropy -sum_k p(k) log p(k) (nan for mu <= 0); ``loc`` does not change it.

    Sums the first 400 terms for mu < 200 and uses the asymptotic expansion beyond.

    Example:
        >>> round(float(entropy(1.0)), 4)
        1.3048
    """
    mu, loc = promote("poisson.entropy", mu, loc)
    ks = jnp.arange(_ENTROPY_TERMS, dtype=mu.dtype)
    m = jnp.expand_dims(jnp.clip(mu, 1e-30, 200.0), -1)
    logp = xlogy(ks, m) - gammaln(ks + 1.0) - m
    direct = -jnp.sum(jnp.exp(logp) * logp, axis=-1)
    big = jnp.maximum(mu, 200.0)
    asymptotic = (0.5 * jnp.log(2.0 * math.pi * math.e * big) - 1.0 / (12.0 * big)
                  - 1.0 / (24.0 * big * big) - 19.0 / (360.0 * big ** 3))
    value = jnp.where(mu < 200.0, direct, asymptotic)
    return jnp.where(mu > 0, value, jnp.nan) + jnp.zeros_like(loc)


def rvs(key: Any, mu: Any, loc: Any = 0, shape: Any = None) -> Any:
    """Poisson draws (integers, plus ``loc``).

    Example:
        >>> import fluxion.random as jr
        >>> rvs(jr.key(0), 3.0, shape=(2,)).shape
        (2,)
    """
    return jr.poisson(key, mu, sample_shape(shape, mu, loc)) + loc
