"""Adding terms to the updates: weight decay and gradient noise."""


import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim._utils import canonicalize_key
from fluxion_optim.transforms._masking import masked
from fluxion_optim.tree_utils import tree_add_scale, tree_random_like

__all__ = ["AddNoiseState", "WeightDecaySchedule", "add_decayed_weights", "add_noise"]


class WeightDecaySchedule(NamedTuple):
    """State of ``add_decayed_weights`` with a scheduled weight decay: the step count."""

    count: Any


def add_decayed_weights(weight_decay: _base.ScalarOrSchedule = 0.0,
                        mask: Any | Callable[[Any], Any] | None = None
                        ) -> _base.GradientTransformation:
    """Adds ``weight_decay * params`` to the updates (where ``mask`` is True, if given).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.add_decayed_weights(0.1)
        >>> tx.update(jnp.zeros(1), tx.init(None), jnp.array([2.0]))[0].tolist()
        [0.20000000298023224]
    """

    def init_fn(params):
        del params
        if callable(weight_decay):
            return WeightDecaySchedule(count=jnp.zeros([], jnp.int32))
        return _base.EmptyState()

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("add_decayed_weights: " + _base.NO_PARAMS_MSG)
        new_state = WeightDecaySchedule(safe_increment(state.count)) if callable(weight_decay) \
            else state
        if isinstance(weight_decay, (int, float)) and weight_decay == 0.0:
            return updates, new_state
        s = weight_decay(state.count) if callable(weight_decay) else weight_decay
        updates = fluxion.tree.map(lambda g, p: None if g is None else g + s * p, updates,
                                   params, is_leaf=lambda x: x is None)
        return updates, new_state

    tx = _base.GradientTransformation(init_fn, update_fn)
    return masked(tx, mask) if mask is not None else tx


class AddNoiseState(NamedTuple):
    """State of :func:`add_noise`: step count and PRNG key."""

    count: Any
    rng_key: Any


def add_noise(eta: Any, gamma: Any, key: Any = None, *,
              seed: int | None = None) -> _base.GradientTransformation:
    """Adds Gaussian noise of variance ``eta / (1 + t) ** gamma`` to the updates.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.add_noise(0.01, 0.55, key=0)
        >>> tx.update(jnp.zeros(3), tx.init(jnp.zeros(3)))[0].shape
        (3,)
    """
    if seed is not None:
        warnings.warn('"seed" is deprecated and will be removed in optax 0.2.7, use "key".',
                      DeprecationWarning, stacklevel=2)
        if key is not None:
            raise ValueError("Only one of seed or key can be specified. (add_noise: give only "
                             "one of `key` and `seed`)")
        key = seed
    if key is None:
        warnings.warn("Specifying a key will be required in optax 0.2.7.", stacklevel=2)
        key = 0

    def init_fn(params):
        del params
        return AddNoiseState(count=jnp.zeros([], jnp.int32), rng_key=canonicalize_key(key))

    def update_fn(updates, state, params=None):
        del params
        count_inc = safe_increment(state.count)
        std = jnp.sqrt(eta / count_inc ** gamma)
        rng_key, sample_key = fluxion.random.split(state.rng_key)
        noise = tree_random_like(sample_key, updates, sampler=fluxion.random.normal)
        return tree_add_scale(updates, std, noise), AddNoiseState(count_inc, rng_key)

    return _base.GradientTransformation(init_fn, update_fn)
