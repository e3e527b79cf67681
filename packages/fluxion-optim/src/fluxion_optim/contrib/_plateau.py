"""Reducing the learning rate when a monitored value stops improving."""


from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim.tree_utils import tree_dtype

__all__ = ["ReduceLROnPlateauState", "reduce_on_plateau"]


class ReduceLROnPlateauState(NamedTuple):
    """State of :func:`reduce_on_plateau`: current ``scale`` and plateau bookkeeping."""

    scale: Any
    best_value: Any
    plateau_count: Any
    cooldown_count: Any
    count: Any
    avg_value: Any


def reduce_on_plateau(factor: float = 0.1, patience: int = 10, rtol: float = 1e-4,
                      atol: float = 0.0, cooldown: int = 0, accumulation_size: int = 1,
                      min_scale: float = 0.0) -> _base.GradientTransformationExtraArgs:
    """Multiplies the updates by a scale that shrinks by ``factor`` after ``patience``
    evaluations without improvement of ``value=`` (averaged over ``accumulation_size`` calls).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.reduce_on_plateau(patience=1)
        >>> s = tx.init(jnp.zeros(1))
        >>> for v in [1.0, 1.0]:
        ...     u, s = tx.update(jnp.ones(1), s, value=v)
        >>> float(s.scale)  # doctest: +ELLIPSIS
        0.1000...
    """
    if not 0.0 < factor < 1.0:
        raise ValueError(f"reduce_on_plateau: `factor` must be in (0, 1), got {factor}")
    if rtol < 0.0 or atol < 0.0:
        raise ValueError(f"reduce_on_plateau: `rtol` and `atol` must be non-negative, got "
                         f"{rtol} and {atol}")
    if rtol == 0.0 and atol == 0.0:
        raise ValueError("reduce_on_plateau: at least one of `rtol` and `atol` must be positive")
    if rtol > 1.0:
        raise ValueError(f"reduce_on_plateau: `rtol` must be <= 1, got {rtol}")

    def init_fn(params):
        low, high = tree_dtype(params, "lowest"), tree_dtype(params, "highest")
        return ReduceLROnPlateauState(
            scale=jnp.asarray(1.0, dtype=low), best_value=jnp.asarray(float("inf"), dtype=high),
            plateau_count=jnp.asarray(0, jnp.int32), cooldown_count=jnp.asarray(0, jnp.int32),
            count=jnp.asarray(0, jnp.int32), avg_value=jnp.asarray(0.0, high))

    def update_scale(state):
        avg = state.avg_value
        improved = jnp.where(avg < (1 - rtol) * state.best_value - atol, 1, 0)
        best = jnp.where(improved, avg.astype(state.best_value.dtype), state.best_value)
        plateau = jnp.where(improved, 0, safe_increment(state.plateau_count))

        def in_cooldown():
            return jnp.asarray(0, jnp.int32), state.scale, state.cooldown_count - 1

        def not_in_cooldown():
            hit = plateau == patience
            return (jnp.where(hit, 0, plateau),
                    jnp.maximum(jnp.where(hit, state.scale * factor, state.scale), min_scale),
                    jnp.where(hit, cooldown, 0).astype(jnp.int32))

        new_plateau, new_scale, new_cooldown = lax.cond(state.cooldown_count > 0, in_cooldown,
                                                        not_in_cooldown)
        return ReduceLROnPlateauState(new_scale, best.astype(state.best_value.dtype), new_plateau,
                                      new_cooldown, jnp.asarray(0, dtype=jnp.int32),
                                      jnp.asarray(0.0, avg.dtype))

    def update_fn(updates, state, params=None, *, value, **extra_args):
        del params, extra_args
        new_count = safe_increment(state.count)
        avg = (state.count * state.avg_value + jnp.asarray(value).astype(state.avg_value.dtype)
               ) / new_count
        state = state._replace(avg_value=avg.astype(state.avg_value.dtype), count=new_count)
        state = lax.cond(new_count == accumulation_size, update_scale, lambda x: x, state)
        return fluxion.tree.map(lambda g: state.scale * g, updates), state

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)
