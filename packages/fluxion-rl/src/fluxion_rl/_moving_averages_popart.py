"""Moving averages (create_ema) and PopArt normalisation."""

from __future__ import annotations

import collections
from typing import Any, Mapping

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.tree_util import tree_map
from fluxion_rl._base import one_hot
from fluxion_rl._pytree import pytree_dataclass

Array = Any

__all__ = ["EmaMoments", "EmaState", "create_ema", "PopArtState", "PopArtOutput", "normalize", "unnormalize", "unnormalize_linear", "art", "pop", "popart"]


# --- exponential moving averages ------------------------------------------------------------------

@pytree_dataclass(frozen=True)
class EmaMoments:
    """Debiased mean and variance estimates (trees shaped like the tracked tree).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> init_fn, update_fn = rlax.create_ema(decay=0.5)
        >>> state = init_fn(jnp.zeros(2))
        >>> moments, state = update_fn(jnp.array([2.0, 4.0]), state)
        >>> type(moments).__name__, float(moments.mean), float(moments.variance)
        ('EmaMoments', 3.0, 1.0)
    """

    mean: Any
    variance: Any


@pytree_dataclass(frozen=True)
class EmaState:
    """Moving averages ``mu`` (of values) and ``nu`` (of squares), and the product of decays.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> init_fn, update_fn = rlax.create_ema(decay=0.5)
        >>> state = init_fn(jnp.zeros(2))
        >>> type(state).__name__, float(state.mu), float(state.nu), float(state.decay_product)
        ('EmaState', 0.0, 0.0, 1.0)
        >>> float(update_fn(jnp.array([2.0, 4.0]), state)[1].decay_product)
        0.5
    """

    mu: Any
    nu: Any
    decay_product: Any

    def debiased_moments(self) -> EmaMoments:
        """Adam-style debiased moments of the tracked tree."""
        tiny = jnp.finfo(jnp.asarray(self.decay_product).dtype).tiny
        debias = 1.0 / jnp.maximum(1 - self.decay_product, tiny)
        mean = tree_map(lambda m: m * debias, self.mu)
        variance = tree_map(lambda m2, m: jnp.maximum(0.0, m2 * debias - jnp.square(m)), self.nu, mean)
        return EmaMoments(mean=mean, variance=variance)


def create_ema(decay: float = 0.999, pmean_axis_name: str | None = None) -> tuple[Any, Any]:
    """``(init_state, update_moments)`` tracking the mean and second moment of each leaf's mean.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> init, update = rlax.create_ema(0.5)
        >>> state = init(jnp.zeros(2))
        >>> moments, state = update(jnp.array([2.0, 4.0]), state)
        >>> moments.mean.tolist(), moments.variance.tolist()
        (3.0, 1.0)
    """

    def init_state(template_tree: Any) -> EmaState:
        zeros = tree_map(lambda x: jnp.zeros_like(jnp.mean(x)), template_tree)
        return EmaState(mu=zeros, nu=zeros, decay_product=jnp.ones([], dtype=jnp.float32))

    def update(moment: Array, value: Array) -> Array:
        mean = jnp.mean(value)
        if pmean_axis_name is not None:
            mean = lax.pmean(mean, axis_name=pmean_axis_name)
        return decay * moment + (1 - decay) * mean

    def update_moments(tree: Any, state: EmaState) -> tuple[EmaMoments, EmaState]:
        squared = tree_map(jnp.square, tree)
        state = EmaState(mu=tree_map(update, state.mu, tree), nu=tree_map(update, state.nu, squared),
                         decay_product=state.decay_product * decay)
        return state.debiased_moments(), state

    return init_state, update_moments


# --- PopArt -------------------------------------------------------------------------------------

PopArtState = collections.namedtuple("PopArtState", ["shift", "scale", "second_moment"])
PopArtState.__doc__ = """PopArt statistics per output: ``shift`` (mean), ``scale`` and second moment.

Example:
    >>> import fluxion.numpy as jnp, fluxion_rl as rlax
    >>> init_fn, update_fn = rlax.popart(num_outputs=2, step_size=0.5, scale_lb=1e-3, scale_ub=1e3)
    >>> state = init_fn()
    >>> state.shift.tolist(), state.scale.tolist(), state.second_moment.tolist()
    ([0.0, 0.0], [1.0, 1.0], [1.0, 1.0])
"""
PopArtOutput = collections.namedtuple("PopArtOutput", ["normalized", "unnormalized"])
PopArtOutput.__doc__ = """A linear layer's selected output, normalised and unnormalised.

Example:
    >>> import fluxion.numpy as jnp, fluxion_rl as rlax
    >>> init_fn, update_fn = rlax.popart(num_outputs=2, step_size=0.5, scale_lb=1e-3, scale_ub=1e3)
    >>> state = init_fn()
    >>> out = rlax.unnormalize_linear(state, jnp.array([1.0, 2.0]), jnp.array(1))
    >>> type(out).__name__, float(out.normalized), float(out.unnormalized)
    ('PopArtOutput', 2.0, 2.0)
"""


def _check_indices(fn: str, indices: Array) -> None:
    if not jnp.issubdtype(jnp.asarray(indices).dtype, jnp.integer):
        raise TypeError(f"{fn}: argument `indices` must have an integer dtype, got {jnp.asarray(indices).dtype}")


def _scatter_add(source: Array, indices: Array, updates: Array, axis_name: Any) -> Array:
    indices = jnp.reshape(indices, [-1])
    updates = jnp.reshape(updates, [-1])
    total = jnp.sum(updates[..., None] * one_hot(indices, source.shape[0]), axis=0)
    if axis_name is not None:
        for name in ((axis_name,) if isinstance(axis_name, str) else axis_name):
            total = lax.psum(total, axis_name=name)
    return source + total


def normalize(state: PopArtState, unnormalized: Array, indices: Array) -> Array:
    """``(x - shift[i]) / scale[i]``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> state = rlax.PopArtState(shift=jnp.array([1.0, -2.0]), scale=jnp.array([2.0, 4.0]), second_moment=jnp.ones(2))
        >>> rlax.normalize(state, jnp.array([5.0, 6.0]), jnp.array([0, 1])).tolist()
        [2.0, 2.0]
    """
    return (unnormalized - state.shift[indices]) / state.scale[indices]


def unnormalize(state: PopArtState, normalized: Array, indices: Array) -> Array:
    """``scale[i] * x + shift[i]``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> state = rlax.PopArtState(shift=jnp.array([1.0, -2.0]), scale=jnp.array([2.0, 4.0]), second_moment=jnp.ones(2))
        >>> rlax.unnormalize(state, jnp.array([2.0, 2.0]), jnp.array([0, 1])).tolist()
        [5.0, 6.0]
    """
    return state.scale[indices] * normalized + state.shift[indices]


def unnormalize_linear(state: PopArtState, inputs: Array, indices: Array) -> PopArtOutput:
    """Select output ``indices`` of ``inputs`` [..., N] and return it normalised and unnormalised.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> state = rlax.PopArtState(shift=jnp.array([1.0, -2.0]), scale=jnp.array([2.0, 4.0]), second_moment=jnp.ones(2))
        >>> out = rlax.unnormalize_linear(state, jnp.array([[0.5, 1.0]]), jnp.array([1]))
        >>> out.normalized.tolist(), out.unnormalized.tolist()
        ([1.0], [2.0])
    """
    _check_indices("unnormalize_linear", indices)
    if tuple(indices.shape) != tuple(inputs.shape[:-1]):
        raise ValueError(f"unnormalize_linear: `indices` must have shape inputs.shape[:-1] = "
                         f"{tuple(inputs.shape[:-1])}, got {tuple(indices.shape)}")
    normalized = jnp.squeeze(jnp.take_along_axis(inputs, indices[..., None], axis=-1), axis=-1)
    return PopArtOutput(normalized, unnormalize(state, normalized, indices))


def art(state: PopArtState, targets: Array, indices: Array, step_size: float, scale_lb: float,
        scale_ub: float, axis_name: Any = None) -> PopArtState:
    """ART: update the running first and second moments towards ``targets`` of outputs ``indices``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> init, _ = rlax.popart(2, step_size=0.1, scale_lb=1e-4, scale_ub=1e4)
        >>> state = rlax.art(init(), jnp.array([5.0, 1.0]), jnp.array([0, 1]), 0.1, 1e-4, 1e4)
        >>> state.shift.round(4).tolist(), state.scale.round(4).tolist()
        ([0.5, 0.1], [1.7748, 0.995])
    """
    _check_indices("art", indices)
    if tuple(jnp.shape(targets)) != tuple(jnp.shape(indices)):
        raise ValueError(f"art: `targets` and `indices` must have the same shape, got "
                         f"{tuple(jnp.shape(targets))} and {tuple(jnp.shape(indices))}")
    shift_new = _scatter_add(state.shift, indices, step_size * (targets - state.shift[indices]), axis_name)
    second_new = _scatter_add(state.second_moment, indices,
                              step_size * (jnp.square(targets) - state.second_moment[indices]), axis_name)
    scale_sq = jnp.clip(second_new - jnp.square(shift_new), scale_lb**2, scale_ub**2)
    new = PopArtState(shift_new, jnp.sqrt(scale_sq), second_new)
    return tree_map(lax.stop_gradient, new)


def pop(params: Mapping[str, Array], old: PopArtState, new: PopArtState) -> dict[str, Array]:
    """POP: rescale a linear layer ``{'w', 'b'}`` so its unnormalised outputs are preserved.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> init, _ = rlax.popart(2, step_size=0.1, scale_lb=1e-4, scale_ub=1e4)
        >>> old = init()
        >>> new = rlax.art(old, jnp.array([5.0, 1.0]), jnp.array([0, 1]), 0.1, 1e-4, 1e4)
        >>> params = rlax.pop({'w': jnp.ones((3, 2)), 'b': jnp.zeros(2)}, old, new)
        >>> params['b'].round(4).tolist()
        [-0.2817, -0.1005]
    """
    w_new = params["w"] * jnp.broadcast_to(old.scale / new.scale, params["w"].shape)
    b_new = (old.scale * params["b"] + old.shift - new.shift) / new.scale
    return dict(w=w_new, b=b_new)


def popart(num_outputs: int, step_size: float, scale_lb: float, scale_ub: float,
           axis_name: Any = None) -> tuple[Any, Any]:
    """``(initial_state, popart_update)`` for PopArt over ``num_outputs`` outputs.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> init, update = rlax.popart(2, step_size=0.1, scale_lb=1e-4, scale_ub=1e4)
        >>> state = init()
        >>> params = {'w': jnp.ones((3, 2)), 'b': jnp.zeros(2)}
        >>> params, state = update(params, state, jnp.array([5.0, 1.0]), jnp.array([0, 1]))
        >>> state.shift.round(4).tolist(), params['b'].round(4).tolist()
        ([0.5, 0.1], [-0.2817, -0.1005])
    """

    def initial_state() -> PopArtState:
        return PopArtState(jnp.zeros([num_outputs]), jnp.ones([num_outputs]), jnp.ones([num_outputs]))

    def popart_update(params: Mapping[str, Array], state: PopArtState, targets: Array,
                      indices: Array) -> tuple[Mapping[str, Array], PopArtState]:
        if step_size is None:
            return params, state
        state_new = art(state, targets, indices, step_size, scale_lb, scale_ub, axis_name)
        return pop(params, state, state_new), state_new

    return initial_state, popart_update
