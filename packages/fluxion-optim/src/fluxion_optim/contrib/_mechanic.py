"""Mechanic (Cutkosky et al. 2023): learns the scale of any base optimizer's updates."""

from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim.tree_utils import tree_dtype, tree_norm, tree_vdot

__all__ = ["MechanicState", "mechanize"]


class MechanicState(NamedTuple):
    """State of :func:`mechanize`: the base optimizer's state, the step count, the per-beta
    accumulators ``r``, ``m``, ``v``, the scales ``s`` and the reference parameters ``x0``."""

    base_optimizer_state: Any
    count: Any
    r: Any
    m: Any
    v: Any
    s: Any
    x0: Any


def mechanize(base_optimizer: _base.GradientTransformation, weight_decay: Any = 1e-2,
              eps: Any = 1e-8, s_init: Any = 1e-6, num_betas: int = 6,
              ) -> _base.GradientTransformationExtraArgs:
    """Mechanic: wraps ``base_optimizer`` and learns, each step, how far to move along the sum
    of its updates (a learned learning-rate scale, for ``num_betas`` averaging rates
    ``1 - 0.1**k`` at once). ``update`` needs ``params``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.mechanize(optax.sgd(1.0))
        >>> params = jnp.array([1.0, 2.0])
        >>> updates, state = tx.update(params, tx.init(params), params)
        >>> updates.shape, state.s.shape
        ((2,), (6,))
    """
    base_optimizer = _base.with_extra_args_support(base_optimizer)

    def init_fn(params: Any) -> MechanicState:
        # the accumulators take the parameters' lowest dtype, so that nothing gets promoted
        dtype = tree_dtype(params, "lowest")
        zeros = jnp.zeros([num_betas], dtype=dtype)
        return MechanicState(base_optimizer_state=base_optimizer.init(params),
                             count=jnp.zeros([], jnp.int32), r=zeros, m=zeros, v=zeros,
                             s=jnp.ones([num_betas], dtype=dtype) * s_init, x0=params)

    def update_fn(updates: Any, state: MechanicState, params: Any = None,
                  **extra_args: Any) -> tuple[Any, MechanicState]:
        if params is None:
            raise ValueError(_base.NO_PARAMS_MSG + " (mechanize.update)")
        base_neg, base_state = base_optimizer.update(updates, state.base_optimizer_state,
                                                     params, **extra_args)
        # start from the parameters seen at the first step (they may have been replaced
        # since init, e.g. by pre-trained weights)
        x0 = lax.cond(state.count == 0, lambda: params, lambda: state.x0)
        s_total = jnp.sum(state.s)
        g_norm, p_norm = tree_norm(updates), tree_norm(params)
        decay = weight_decay * s_total * g_norm / (p_norm + eps)
        grads = fluxion.tree.map(lambda g, p: g + decay * p, updates, params)
        # Delta (the summed base steps) is recomputed from x0 and the current parameters
        delta_prev = fluxion.tree.map(lambda x, x_0: (x_0 - x) / (s_total + eps), params, x0)
        delta = fluxion.tree.map(lambda d, u: d - u, delta_prev, base_neg)
        h = tree_vdot(grads, delta_prev)
        h_clipped = lax.clamp(-state.m, jnp.ones_like(state.m) * h, state.m)
        betas = jnp.array([1.0 - 0.1 ** k for k in range(1, num_betas + 1)],
                          dtype=state.s.dtype)
        m = jnp.maximum(betas * state.m, jnp.abs(h) + eps)
        v = betas ** 2 * state.v + h ** 2
        r = betas * state.r + h_clipped * state.s
        wealth = (s_init / jnp.size(betas)) * m + jnp.maximum(0.0, r)
        s = wealth / (jnp.sqrt(v) + eps)
        s_sum = jnp.sum(s)
        new_params = fluxion.tree.map(lambda a, d: a - s_sum * d, x0, delta)
        neg_updates = fluxion.tree.map(lambda new, old: new - old, new_params, params)
        return neg_updates, MechanicState(base_optimizer_state=base_state,
                                          count=safe_increment(state.count), r=r, m=m, v=v,
                                          s=s, x0=x0)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)
