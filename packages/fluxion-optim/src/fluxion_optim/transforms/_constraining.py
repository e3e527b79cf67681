"""Constraints on updates: non-negative parameters, NaN removal."""


from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base

__all__ = ["NonNegativeParamsState", "ZeroNansState", "keep_params_nonnegative", "zero_nans"]

NonNegativeParamsState = _base.EmptyState


def keep_params_nonnegative() -> _base.GradientTransformation:
    """Modifies updates so that ``params + updates`` stays non-negative (a parameter that would
    go negative is set to zero).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.keep_params_nonnegative()
        >>> tx.update(jnp.array([-2.0]), tx.init(None), jnp.array([1.0]))[0].tolist()
        [-1.0]
    """

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("keep_params_nonnegative: " + _base.NO_PARAMS_MSG)
        updates = fluxion.tree.map(
            lambda p, u: None if p is None else jnp.where(p + u < 0.0, -p, u), params, updates,
            is_leaf=lambda x: x is None)
        return updates, state

    return _base.GradientTransformation(lambda params: NonNegativeParamsState(), update_fn)


class ZeroNansState(NamedTuple):
    """State of :func:`zero_nans`: per leaf, whether the last updates contained a NaN."""

    found_nan: Any


def zero_nans() -> _base.GradientTransformation:
    """Replaces NaNs in the updates by zeros and records, per leaf, whether any were found.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.zero_nans()
        >>> u, s = tx.update(jnp.array([jnp.nan, 1.0]), tx.init(jnp.zeros(2)))
        >>> u.tolist(), bool(s.found_nan)
        ([0.0, 1.0], True)
    """

    def init_fn(params):
        return ZeroNansState(fluxion.tree.map(lambda p: jnp.array(False, dtype=jnp.bool_), params))

    def update_fn(updates, state, params=None):
        del params, state
        found = fluxion.tree.map(lambda p: jnp.any(jnp.isnan(p)), updates)
        updates = fluxion.tree.map(lambda p: jnp.where(jnp.isnan(p), jnp.zeros_like(p), p),
                                   updates)
        return updates, ZeroNansState(found)

    return _base.GradientTransformation(init_fn, update_fn)
