"""``fluxion.random``: JAX's counter-based PRNG, bit for bit.

Keys are explicit: make one with :func:`key` (a typed key array, dtype ``key<fry>``) or
:func:`PRNGKey` (legacy raw ``uint32[2]`` data), derive new ones with :func:`split` and
:func:`fold_in`, and pass a key to every sampler. The generator is threefry2x32 written with lax
bit operations (see ``fluxion/random/_threefry.py``), with JAX 0.10's default
``jax_threefry_partitionable=True`` layout, so the same key, shape and dtype give the same numbers
as ``jax.random``. The samplers follow JAX's algorithms step by step.

This package only re-exports; the code lives in modules by topic: ``_keys`` (typed key arrays,
key-reuse checking), ``_key_ops`` (making and deriving keys), ``_threefry`` (the hash), and one
module per sampler family: ``_uniform``, ``_normal``, ``_continuous``, ``_discrete``, ``_gamma``,
``_multivariate`` and ``_permutations``. The key operations and ``uniform``/``bits``/``randint``
are imported with the package, the other sampler families on first access of one of their names
(PEP 562).

Example:
    >>> import fluxion
    >>> key = fluxion.random.key(0)
    >>> k1, k2 = fluxion.random.split(key)
    >>> fluxion.random.normal(k1, (3,)).shape
    (3,)
"""

from fluxion.core.lazy import lazy_namespace as _lazy_namespace
from fluxion.random._key_ops import (
    PRNGKey,
    clone,
    fold_in,
    key,
    key_data,
    key_dtype,
    key_impl,
    split,
    threefry_2x32,
    wrap_key_data,
)
from fluxion.random._keys import PRNGKeyArray as KeyArray
from fluxion.random._uniform import bits, randint, uniform

__all__ = [
    "KeyArray", "PRNGKey", "ball", "bernoulli", "beta", "binomial", "bits", "categorical",
    "cauchy", "chisquare", "choice", "clone", "dirichlet", "double_sided_maxwell",
    "exponential", "f", "fold_in", "gamma", "generalized_normal", "geometric", "gumbel", "key",
    "key_data", "key_dtype", "key_impl", "laplace", "loggamma", "logistic", "lognormal",
    "maxwell", "multinomial", "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson",
    "rademacher", "randint", "rayleigh", "split", "t", "threefry_2x32", "triangular",
    "truncated_normal", "uniform", "wald", "weibull_min", "wrap_key_data",
]


# Sampler families imported on first access of one of their names: {submodule: names}.
_LAZY_FAMILIES = {
    "_continuous": (
        "cauchy", "exponential", "gumbel", "laplace", "logistic", "pareto", "rayleigh",
        "triangular", "weibull_min",
    ),
    "_discrete": (
        "bernoulli", "binomial", "categorical", "geometric", "poisson", "rademacher",
    ),
    "_gamma": (
        "beta", "chisquare", "dirichlet", "f", "gamma", "generalized_normal", "loggamma",
        "t",
    ),
    "_multinomial": (
        "multinomial",
    ),
    "_multivariate": (
        "ball", "multivariate_normal", "orthogonal",
    ),
    "_normal": (
        "double_sided_maxwell", "lognormal", "maxwell", "normal", "truncated_normal",
        "wald",
    ),
    "_permutations": (
        "choice", "permutation",
    ),
}
__getattr__, __dir__ = _lazy_namespace("fluxion.random", globals(), _LAZY_FAMILIES)
