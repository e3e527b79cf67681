"""Transformations applied only when a condition holds (finite updates, a step predicate)."""


from typing import Any, NamedTuple, Protocol

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim.tree_utils import tree_zeros_like

__all__ = ["ApplyIfFiniteState", "ConditionFn", "ConditionallyMaskState",
           "ConditionallyTransformState", "apply_if_finite", "conditionally_mask",
           "conditionally_transform"]


class ConditionFn(Protocol):
    """``f(step, **extra_args) -> bool scalar``."""

    def __call__(self, step: Any, **extra_args: Any) -> Any: ...


class ConditionallyTransformState(NamedTuple):
    """State of :func:`conditionally_transform`."""

    inner_state: Any
    step: Any


def conditionally_transform(inner: _base.GradientTransformation, should_transform_fn: ConditionFn,
                            forward_extra_args: bool = False
                            ) -> _base.GradientTransformationExtraArgs:
    """Applies ``inner`` when ``should_transform_fn(step)`` holds, else passes updates through.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.conditionally_transform(optax.scale(2.0), lambda step: step > 0)
        >>> s = tx.init(jnp.zeros(1))
        >>> u, s = tx.update(jnp.ones(1), s); u.tolist()
        [1.0]
        >>> u, s = tx.update(jnp.ones(1), s); u.tolist()
        [2.0]
    """
    inner = _base.with_extra_args_support(inner)

    def init_fn(params):
        return ConditionallyTransformState(inner.init(params), jnp.zeros([], dtype=jnp.int32))

    def update_fn(updates, state, params=None, **extra_args):
        kwargs = extra_args if forward_extra_args else {}
        updates, new_inner = lax.cond(
            should_transform_fn(state.step, **kwargs),
            lambda _: inner.update(updates, state.inner_state, params, **extra_args),
            lambda _: (updates, state.inner_state), None)
        return updates, ConditionallyTransformState(new_inner, safe_increment(state.step))

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


class ConditionallyMaskState(NamedTuple):
    """State of :func:`conditionally_mask`."""

    step: Any
    inner_state: Any


def conditionally_mask(inner: _base.GradientTransformation, should_transform_fn: ConditionFn,
                       forward_extra_args: bool = False) -> _base.GradientTransformationExtraArgs:
    """Applies ``inner`` when ``should_transform_fn(step)`` holds, else returns zero updates.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.conditionally_mask(optax.scale(2.0), lambda step: step > 0)
        >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0].tolist()
        [0.0]
    """
    inner = _base.with_extra_args_support(inner)

    def init_fn(params):
        return ConditionallyMaskState(jnp.zeros([], jnp.int32), inner.init(params))

    def update_fn(updates, state, params=None, **extra_args):
        kwargs = extra_args if forward_extra_args else {}
        updates, new_inner = lax.cond(
            should_transform_fn(state.step, **kwargs),
            lambda _: inner.update(updates, state.inner_state, params, **extra_args),
            lambda _: (tree_zeros_like(updates), state.inner_state), None)
        return updates, ConditionallyMaskState(safe_increment(state.step), new_inner)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


class ApplyIfFiniteState(NamedTuple):
    """State of :func:`apply_if_finite`: consecutive and total counts of non-finite updates."""

    notfinite_count: Any
    last_finite: Any
    total_notfinite: Any
    inner_state: Any


def apply_if_finite(inner: _base.GradientTransformation,
                    max_consecutive_errors: int) -> _base.GradientTransformation:
    """Skips (zero updates, unchanged inner state) steps whose updates contain NaN or inf,
    unless more than ``max_consecutive_errors`` happen in a row.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.apply_if_finite(optax.sgd(1.0), 2)
        >>> u, s = tx.update(jnp.array([jnp.nan]), tx.init(jnp.zeros(1)))
        >>> u.tolist(), int(s.total_notfinite)
        ([0.0], 1)
    """
    inner = _base.with_extra_args_support(inner)

    def init_fn(params):
        return ApplyIfFiniteState(jnp.zeros([], jnp.int32), jnp.array(True, jnp.bool_),
                                  jnp.zeros([], jnp.int32), inner.init(params))

    def update_fn(updates, state, params=None, **extra_args):
        isfinite = jnp.all(jnp.array([jnp.all(jnp.isfinite(p))
                                      for p in fluxion.tree.leaves(updates)]))
        notfinite_count = jnp.where(isfinite, jnp.zeros([], jnp.int32),
                                    safe_increment(state.notfinite_count))
        updates, new_inner = lax.cond(
            jnp.logical_or(isfinite, notfinite_count > max_consecutive_errors),
            lambda _: inner.update(updates, state.inner_state, params, **extra_args),
            lambda _: (tree_zeros_like(updates), state.inner_state), None)
        total = jnp.where(isfinite, state.total_notfinite, safe_increment(state.total_notfinite))
        return updates, ApplyIfFiniteState(notfinite_count, isfinite, total, new_inner)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)
