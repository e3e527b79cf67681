"""Probability distributions and statistics (mirrors ``jax.scipy.stats``).

Each distribution is a submodule with SciPy's functions (``logpdf``, ``cdf``, ``ppf``, ...) and,
beyond JAX, ``rvs(key, ...)`` sampling through ``fluxion.random``.

Example:
    >>> from fluxion_scipy.stats import norm
    >>> float(norm.cdf(0.0))
    0.5
"""

from __future__ import annotations

from fluxion_scipy.stats import (
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)
from fluxion_scipy.stats._core import ModeResult, mode, rankdata, sem
from fluxion_scipy.stats._kde import gaussian_kde

__all__ = [
    "ModeResult", "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet",
    "expon", "gamma", "gaussian_kde", "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace",
    "logistic", "mode", "multinomial", "multivariate_normal", "nbinom", "norm", "pareto",
    "poisson", "rankdata", "sem", "t", "truncnorm", "uniform", "vonmises", "wrapcauchy",
]
