"""Invertible value transforms (h and h^-1 of the non-linear Bellman operators) and two-hot codes."""

from __future__ import annotations

from typing import Any

import fluxion.nn as fnn
import fluxion.numpy as jnp
from fluxion_rl import _checks
from fluxion_rl._base import one_hot

Array = Any

__all__ = [
    "identity", "sigmoid", "logit", "signed_logp1", "signed_expm1", "signed_hyperbolic",
    "signed_parabolic", "hyperbolic_sin", "hyperbolic_arcsin", "power", "transform_to_2hot",
    "transform_from_2hot", "transform_to_2hot_nonlinear", "transform_from_2hot_nonlinear",
]


def _float(fn: str, x: Any) -> None:
    _checks.kinds(fn, x=(x, "float"))


def identity(x: Array) -> Array:
    """Returns ``x`` (checked to be floating point).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.identity(jnp.array([1.0, -2.0])).tolist()
        [1.0, -2.0]
    """
    _float("identity", x)
    return x


def sigmoid(x: Array) -> Array:
    """The logistic function ``1 / (1 + exp(-x))``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.sigmoid(jnp.array([0.0, 2.0])).tolist()
        [0.5, 0.880797]
    """
    _float("sigmoid", x)
    return fnn.sigmoid(x)


def logit(x: Array) -> Array:
    """Inverse of ``sigmoid``: ``-log(1 / x - 1)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.logit(jnp.array([0.5, 0.880797])).tolist()
        [-0.0, 2.0]
    """
    _float("logit", x)
    return -jnp.log(1.0 / x - 1.0)


def signed_logp1(x: Array) -> Array:
    """``sign(x) * log(1 + |x|)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.signed_logp1(jnp.array([-(jnp.e - 1), 0.0, 3.0])).tolist()
        [-1.0, 0.0, 1.38629]
    """
    _float("signed_logp1", x)
    return jnp.sign(x) * jnp.log1p(jnp.abs(x))


def signed_expm1(x: Array) -> Array:
    """Inverse of ``signed_logp1``: ``sign(x) * (exp(|x|) - 1)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.signed_expm1(jnp.array([-1.0, 0.0, 1.386294])).tolist()
        [-1.71828, 0.0, 3.0]
    """
    _float("signed_expm1", x)
    return jnp.sign(x) * jnp.expm1(jnp.abs(x))


def signed_hyperbolic(x: Array, eps: float = 1e-3) -> Array:
    """The R2D2 value transform ``sign(x)(sqrt(|x| + 1) - 1) + eps x``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.signed_hyperbolic(jnp.array([3.0, -8.0])).tolist()
        [1.003, -2.008]
    """
    _float("signed_hyperbolic", x)
    return jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1) - 1) + eps * x


def hyperbolic_sin(x: Array) -> Array:
    """``sinh(x)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_rl._transforms import hyperbolic_sin
        >>> hyperbolic_sin(jnp.array([0.0, 1.0])).tolist()
        [0.0, 1.175201177597046]
    """
    _float("hyperbolic_sin", x)
    return jnp.sinh(x)


def hyperbolic_arcsin(x: Array) -> Array:
    """``arcsinh(x)``, the inverse of ``hyperbolic_sin``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_rl._transforms import hyperbolic_arcsin
        >>> hyperbolic_arcsin(jnp.array([0.0, 1.0])).tolist()
        [0.0, 0.8813736438751221]
    """
    _float("hyperbolic_arcsin", x)
    return jnp.arcsinh(x)


def signed_parabolic(x: Array, eps: float = 1e-3) -> Array:
    """Inverse of ``signed_hyperbolic`` for the same ``eps``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> x = jnp.array([3.0, -8.0])
        >>> rlax.signed_parabolic(rlax.signed_hyperbolic(x)).tolist()
        [2.99976, -8.0]
    """
    _float("signed_parabolic", x)
    z = jnp.sqrt(1 + 4 * eps * (eps + 1 + jnp.abs(x))) / 2 / eps - 1 / 2 / eps
    return jnp.sign(x) * (jnp.square(z) - 1)


def power(x: Array, p: float) -> Array:
    """A signed power transform ``sign(x)((|x| / sqrt(p) + 1)^p - 1) / sqrt(p)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.power(jnp.array([2.0, -3.0]), 2.0).tolist()
        [3.41421, -6.18198]
    """
    _float("power", x)
    q = jnp.sqrt(p)
    return jnp.sign(x) * (jnp.power(jnp.abs(x) / q + 1.0, p) - 1) / q


def transform_to_2hot(scalar: Array, min_value: float, max_value: float, num_bins: int) -> Array:
    """Two-hot encoding of ``scalar`` over ``num_bins`` evenly spaced bins in ``[min, max]``.

    Returns shape ``scalar.shape + (num_bins,)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.transform_to_2hot(jnp.array([0.25, 1.0]), 0.0, 1.0, 3).tolist()
        [[0.49999, 0.50001, 0.0], [0.0, 0.0, 1.0]]
    """
    scalar = jnp.clip(jnp.asarray(scalar), min_value, max_value)
    scalar_bin = (scalar - min_value) / (max_value - min_value) * (num_bins - 1)
    lower, upper = jnp.floor(scalar_bin), jnp.ceil(scalar_bin)
    lower_value = lower / (num_bins - 1.0) * (max_value - min_value) + min_value
    upper_value = upper / (num_bins - 1.0) * (max_value - min_value) + min_value
    p_lower = (upper_value - scalar) / (upper_value - lower_value + 1e-5)
    p_upper = 1 - p_lower
    lower_hot = one_hot(lower, num_bins, dtype=scalar.dtype) * p_lower[..., None]
    upper_hot = one_hot(upper, num_bins, dtype=scalar.dtype) * p_upper[..., None]
    return lower_hot + upper_hot


def transform_from_2hot(probs: Array, min_value: float, max_value: float, num_bins: int) -> Array:
    """Expected value of ``probs`` [..., num_bins] over evenly spaced bins in ``[min, max]``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> probs = rlax.transform_to_2hot(jnp.array([0.3, -0.75]), -1.0, 1.0, 11)
        >>> rlax.transform_from_2hot(probs, -1.0, 1.0, 11).tolist()
        [0.300005, -0.749992]
    """
    probs = jnp.asarray(probs)
    support = jnp.linspace(min_value, max_value, num_bins).astype(probs.dtype)
    return jnp.sum(probs * support[None], -1)


def transform_to_2hot_nonlinear(scalar: Array, bins: Array) -> Array:
    """Two-hot encoding of ``scalar`` over an increasing, arbitrary ``bins`` [K].

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_rl._transforms import transform_to_2hot_nonlinear
        >>> transform_to_2hot_nonlinear(jnp.array([0.5, 2.5]), jnp.array([0.0, 1.0, 4.0])).tolist()
        [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]
    """
    bins = jnp.asarray(bins)
    num_bins = bins.shape[0]
    scalar = jnp.clip(jnp.asarray(scalar), bins[0], bins[-1])
    upper_index = jnp.argmax(scalar[..., None] <= bins.reshape(1, -1), axis=-1)
    upper_value = bins[upper_index]
    lower_value = bins[upper_index - 1]
    p_lower = (upper_value - scalar) / (upper_value - lower_value)
    p_upper = 1 - p_lower
    lower_hot = fnn.one_hot(upper_index - 1, num_bins) * p_lower[..., None]
    upper_hot = fnn.one_hot(upper_index, num_bins) * p_upper[..., None]
    return lower_hot + upper_hot


def transform_from_2hot_nonlinear(probs: Array, bins: Array) -> Array:
    """Expected value of ``probs`` [..., K] over ``bins`` [K].

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_rl._transforms import transform_from_2hot_nonlinear
        >>> probs = jnp.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
        >>> transform_from_2hot_nonlinear(probs, jnp.array([0.0, 1.0, 4.0])).tolist()
        [0.5, 2.5]
    """
    return jnp.sum(jnp.asarray(probs) * jnp.asarray(bins)[None], -1)
