"""Sharpness-aware minimization (SAM)."""


from collections.abc import Callable
from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._update import apply_updates
from fluxion_optim.tree_utils import tree_norm

__all__ = ["NormalizeState", "SAMState", "normalize", "sam"]

NormalizeState = _base.EmptyState


def normalize() -> _base.GradientTransformation:
    """Divides the updates by their global norm (SAM's adversarial direction).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.normalize()
        >>> tx.update(jnp.array([3.0, 4.0]), tx.init(None))[0].tolist()
        [0.6000000238418579, 0.800000011920929]
    """

    def update_fn(updates, state, params=None):
        del params
        g_norm = tree_norm(updates)
        return fluxion.tree.map(lambda g: g / g_norm, updates), state

    return _base.GradientTransformation(lambda params: NormalizeState(), update_fn)


class SAMState(NamedTuple):
    """State of :func:`sam`."""

    steps_since_sync: Any
    opt_state: Any
    adv_state: Any
    cache: Any


def sam(optimizer: _base.GradientTransformation, adv_optimizer: _base.GradientTransformation,
        sync_period: int = 2, reset_state: bool = True, opaque_mode: bool = False,
        batch_axis_name: str | None = None) -> _base.GradientTransformationExtraArgs:
    """Sharpness-aware minimization: ``sync_period - 1`` adversarial ascent steps with
    ``adv_optimizer``, then one step of ``optimizer`` from the cached parameters with the
    gradient at the adversarial point. ``opaque_mode=True`` does it in one call with
    ``grad_fn=``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.sam(optax.sgd(0.1),
        ...                         optax.chain(optax.contrib.normalize(), optax.sgd(0.05)))
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    if sync_period < 1:
        raise ValueError(f"sam: `sync_period` must be >= 1, got {sync_period}")

    def init_fn(params):
        return SAMState(jnp.zeros(shape=(), dtype=jnp.int32), optimizer.init(params),
                        adv_optimizer.init(params), None if opaque_mode else params)

    def pick(cond, if_true, if_false):
        return fluxion.tree.map(lambda t, f: cond * t + (1 - cond) * f, if_true, if_false)

    def transparent(updates, state, params=None, *, grad_fn: Callable | None = None):
        del grad_fn
        first = state.steps_since_sync == 0
        last = state.steps_since_sync == sync_period - 1
        adv_updates, adv_state = adv_optimizer.update(updates, state.adv_state, params)
        adv_updates = fluxion.tree.map(lambda x: -x, adv_updates)
        opt_updates, opt_state = optimizer.update(updates, state.opt_state, state.cache)
        opt_updates = fluxion.tree.map(lambda c, p, u: c - p + u, state.cache, params,
                                       opt_updates)
        cache = pick(first, params, state.cache)
        updates = pick(last, opt_updates, adv_updates)
        if reset_state:
            adv_state = pick(last, adv_optimizer.init(params), adv_state)
        else:
            adv_state = pick(last, state.adv_state, adv_state)
        opt_state = pick(last, opt_state, state.opt_state)
        steps = (state.steps_since_sync + 1) % sync_period
        return updates, SAMState(steps, opt_state, adv_state, cache)

    def opaque(updates, state, params=None, *, grad_fn: Callable | None = None):
        if grad_fn is None:
            raise ValueError("sam: `grad_fn` must be passed to update when opaque_mode=True")
        adv_params, adv_updates, adv_state = params, updates, state.adv_state
        for i in range(sync_period - 1):
            adv_updates, adv_state = adv_optimizer.update(adv_updates, adv_state, adv_params)
            adv_updates = fluxion.tree.map(lambda x: -x, adv_updates)
            adv_params = apply_updates(adv_params, adv_updates)
            adv_updates = grad_fn(adv_params, i)
            if batch_axis_name is not None:
                adv_updates = lax.pmean(adv_updates, axis_name=batch_axis_name)
        if reset_state:
            adv_state = adv_optimizer.init(params)
        updates, opt_state = optimizer.update(adv_updates, state.opt_state, params)
        return updates, SAMState(jnp.zeros(shape=(), dtype=jnp.int32), opt_state, adv_state,
                                 None)

    return _base.GradientTransformationExtraArgs(init_fn, opaque if opaque_mode else transparent)
