"""Schedule-free optimization: iterate averaging in place of a learning-rate schedule."""


from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base
from fluxion_optim._adaptive import scale_by_rms
from fluxion_optim._alias import sgd
from fluxion_optim._numerics import safe_increment
from fluxion_optim._scaling import scale_by_learning_rate
from fluxion_optim.schedules import warmup_constant_schedule
from fluxion_optim.transforms import add_decayed_weights, chain
from fluxion_optim.tree_utils import tree_cast, tree_dtype

__all__ = ["ScheduleFreeState", "schedule_free", "schedule_free_adamw",
           "schedule_free_eval_params", "schedule_free_sgd"]


class ScheduleFreeState(NamedTuple):
    """State of :func:`schedule_free`."""

    b1: Any
    weight_sum: Any
    step_count: Any
    max_lr: Any
    base_optimizer_state: Any
    z: Any


def schedule_free_eval_params(state: Any, params: Any) -> Any:
    """The averaged parameters ``x`` to evaluate with (training runs on the interpolated
    ``y``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.schedule_free_sgd(0.1)
        >>> p = jnp.ones(2)
        >>> optax.contrib.schedule_free_eval_params(opt.init(p), p).tolist()
        [1.0, 1.0]
    """
    b1, z = getattr(state, "b1", None), getattr(state, "z", None)
    if b1 is None or z is None:
        raise ValueError("schedule_free_eval_params: `state` must be a ScheduleFreeState, got "
                         f"{type(state).__name__}")
    return fluxion.tree.map(lambda y, zi: (y - (1.0 - b1) * zi) / b1, params, z)


def schedule_free(base_optimizer: _base.GradientTransformation,
                  learning_rate: _base.ScalarOrSchedule, b1: Any = 0.9,
                  weight_lr_power: Any = 2.0,
                  state_dtype: Any = None) -> _base.GradientTransformationExtraArgs:
    """Turns ``base_optimizer`` into its schedule-free version (Defazio et al., 2024).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.schedule_free(optax.sgd(0.1), learning_rate=0.1)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    base_optimizer = _base.with_extra_args_support(base_optimizer)

    def init_fn(params):
        dtype = tree_dtype(params, "lowest")
        z = tree_cast(params, state_dtype) if state_dtype is not None else params
        z = fluxion.tree.map(lambda t: jnp.array(t, copy=True), z)
        return ScheduleFreeState(jnp.asarray(b1, dtype=dtype), jnp.zeros([], dtype=dtype),
                                 jnp.ones([], dtype=jnp.int32), jnp.zeros([], dtype=dtype),
                                 base_optimizer.init(params), z)

    def update_fn(grads, state, params=None, **extra_args):
        if params is None:
            raise ValueError("schedule_free: " + _base.NO_PARAMS_MSG)
        lr = learning_rate
        if callable(learning_rate):
            lr = jnp.asarray(learning_rate(state.step_count), dtype=state.max_lr.dtype)
        max_lr = jnp.maximum(state.max_lr, lr)
        weight = max_lr ** weight_lr_power
        total = state.weight_sum + weight
        ck = jnp.where(jnp.logical_or(jnp.isnan(weight), jnp.isnan(total)),
                       jnp.full(weight.shape, jnp.nan),
                       jnp.nan_to_num(weight / total, nan=0.0, posinf=jnp.inf))
        base_updates, base_state = base_optimizer.update(grads, state.base_optimizer_state,
                                                         params, **extra_args)
        z = fluxion.tree.map(lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype),
                             state.z, base_updates)
        prev_x = fluxion.tree.map(lambda y, zi: (y - (1.0 - b1) * zi) / b1, params, state.z)
        x = fluxion.tree.map(lambda xi, zi: (1.0 - ck) * xi + ck * zi, prev_x, z)
        new_params = fluxion.tree.map(lambda xi, zi: b1 * xi + (1.0 - b1) * zi, x, z)
        updates = fluxion.tree.map(lambda n, p: n - p, new_params, params)
        return updates, ScheduleFreeState(state.b1, total, safe_increment(state.step_count),
                                          max_lr, base_state, z)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


def schedule_free_sgd(learning_rate: Any = 1.0, warmup_steps: int | None = None, b1: Any = 0.9,
                      weight_decay: Any = None, weight_lr_power: Any = 2.0,
                      state_dtype: Any = None) -> _base.GradientTransformationExtraArgs:
    """Schedule-free SGD.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.schedule_free_sgd(0.1)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    if warmup_steps is not None:
        learning_rate = warmup_constant_schedule(0, learning_rate, warmup_steps)
    optimizer = sgd(learning_rate)
    if weight_decay is not None:
        optimizer = chain(add_decayed_weights(weight_decay), optimizer)
    return schedule_free(optimizer, learning_rate=learning_rate, b1=b1,
                         weight_lr_power=weight_lr_power, state_dtype=state_dtype)


def schedule_free_adamw(learning_rate: Any = 0.0025, warmup_steps: int | None = None,
                        b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
                        weight_decay: Any = 0.0, weight_lr_power: Any = 2.0,
                        state_dtype: Any = None) -> _base.GradientTransformationExtraArgs:
    """Schedule-free AdamW.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.schedule_free_adamw(1e-2)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    if warmup_steps is not None:
        learning_rate = warmup_constant_schedule(0, learning_rate, warmup_steps)
    optimizer = chain(scale_by_rms(decay=b2, eps=eps, eps_in_sqrt=False, bias_correction=True),
                      add_decayed_weights(weight_decay), scale_by_learning_rate(learning_rate))
    return schedule_free(optimizer, learning_rate=learning_rate, b1=b1,
                         weight_lr_power=weight_lr_power, state_dtype=state_dtype)
