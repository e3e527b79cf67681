"""Scalings of the updates that are not moment-based: step sizes, schedules, trust ratios,
signs, Rprop, Polyak, L-BFGS, optimistic gradients."""


from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment, safe_norm, safe_root_mean_squares
from fluxion_optim.tree_utils import (
    tree_add_scale,
    tree_cast,
    tree_cast_like,
    tree_full_like,
    tree_norm,
    tree_real,
    tree_scale,
    tree_sub,
    tree_vdot,
    tree_zeros_like,
)

__all__ = [
    "ApplyEvery", "ScaleByDistanceOverGradientsState", "ScaleByLBFGSState",
    "ScaleByOptimisticGradientState", "ScaleByRpropState", "ScaleByScheduleState",
    "apply_every", "centralize", "normalize_by_update_norm", "scale",
    "scale_by_distance_over_gradients", "scale_by_lbfgs", "scale_by_learning_rate",
    "scale_by_optimistic_gradient", "scale_by_param_block_norm", "scale_by_param_block_rms",
    "scale_by_polyak", "scale_by_rprop", "scale_by_schedule", "scale_by_sign",
    "scale_by_trust_ratio",
]

_map = fluxion.tree.map


def _need_params(fn: str, params: Any) -> None:
    if params is None:
        raise ValueError(f"{fn}: {_base.NO_PARAMS_MSG}")


def scale(step_size: Any) -> _base.GradientTransformation:
    """Multiplies the updates by ``step_size``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.scale(-2.0).update(jnp.ones(1), optax.EmptyState())[0].tolist()
        [-2.0]
    """

    def update_fn(updates, state, params=None):
        del params
        return _map(lambda g: step_size * g, updates), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


class ScaleByScheduleState(NamedTuple):
    """State of :func:`scale_by_schedule`: the step count."""

    count: Any


def scale_by_schedule(step_size_fn: _base.Schedule) -> _base.GradientTransformation:
    """Multiplies the updates by ``step_size_fn(count)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_schedule(lambda c: 2.0)
        >>> tx.update(jnp.ones(1), tx.init(None))[0].tolist()
        [2.0]
    """

    def init_fn(params):
        del params
        return ScaleByScheduleState(count=jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None):
        del params
        step_size = step_size_fn(state.count)
        updates = _map(lambda g: jnp.array(step_size, dtype=g.dtype) * g, updates)
        return updates, ScaleByScheduleState(count=safe_increment(state.count))

    return _base.GradientTransformation(init_fn, update_fn)


def scale_by_learning_rate(learning_rate: _base.ScalarOrSchedule | None = None, *,
                           flip_sign: bool = True) -> _base.GradientTransformation:
    """Multiplies by ``-learning_rate`` (a number or a schedule; ``flip_sign=False`` keeps the
    sign; ``None`` is the identity).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_learning_rate(0.5)
        >>> tx.update(jnp.ones(1), tx.init(None))[0].tolist()
        [-0.5]
    """
    if learning_rate is None:
        return _base.identity()
    m = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: m * learning_rate(count))
    return scale(m * learning_rate)


def scale_by_param_block_norm(min_scale: Any = 1e-3) -> _base.GradientTransformation:
    """Multiplies each leaf's update by the norm of the matching parameter (at least
    ``min_scale``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_param_block_norm()
        >>> tx.update(jnp.ones(2), tx.init(None), jnp.array([3.0, 4.0]))[0].tolist()
        [5.0, 5.0]
    """

    def update_fn(updates, state, params=None):
        _need_params("scale_by_param_block_norm", params)
        return _map(lambda u, p: u * safe_norm(p, min_scale), updates, params), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


def scale_by_param_block_rms(min_scale: Any = 1e-3) -> _base.GradientTransformation:
    """Multiplies each leaf's update by the RMS of the matching parameter (at least
    ``min_scale``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_param_block_rms()
        >>> tx.update(jnp.ones(1), tx.init(None), jnp.array([3.0]))[0].tolist()
        [3.0]
    """

    def update_fn(updates, state, params=None):
        _need_params("scale_by_param_block_rms", params)
        return _map(lambda u, p: u * safe_root_mean_squares(p, min_scale), updates,
                    params), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


def scale_by_trust_ratio(min_norm: Any = 0.0, trust_coefficient: Any = 1.0,
                         eps: Any = 0.0) -> _base.GradientTransformation:
    """Scales each leaf's update by ``trust_coefficient * |param| / (|update| + eps)`` (LARS,
    LAMB); 1 where either norm is zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_trust_ratio()
        >>> tx.update(jnp.array([1.0]), tx.init(None), jnp.array([4.0]))[0].tolist()
        [4.0]
    """

    def update_fn(updates, state, params=None):
        _need_params("scale_by_trust_ratio", params)

        def scale_leaf(update, param):
            param_norm = safe_norm(param, min_norm)
            update_norm = safe_norm(update, min_norm)
            ratio = trust_coefficient * param_norm / (update_norm + eps)
            zero = jnp.logical_or(param_norm == 0.0, update_norm == 0.0)
            return update * jnp.where(zero, jnp.array(1.0, dtype=param.dtype), ratio)

        return _map(scale_leaf, updates, params), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


class ScaleByRpropState(NamedTuple):
    """State of :func:`scale_by_rprop`."""

    step_sizes: Any
    prev_updates: Any


def scale_by_rprop(learning_rate: Any, eta_minus: Any = 0.5, eta_plus: Any = 1.2,
                   min_step_size: Any = 1e-6,
                   max_step_size: Any = 50.0) -> _base.GradientTransformation:
    """Rprop: per-element step sizes that grow while the gradient keeps its sign and shrink
    when it flips.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_rprop(0.1)
        >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0].tolist()
        [0.0]
    """

    def init_fn(params):
        return ScaleByRpropState(tree_full_like(params, learning_rate), tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        sign = _map(lambda g, prev: g * prev, updates, state.prev_updates)
        step_sizes = _map(
            lambda s, step: jnp.where(s == 0, step, jnp.clip(
                step * jnp.where(s > 0, eta_plus, eta_minus), min=min_step_size,
                max=max_step_size)), sign, state.step_sizes)
        prev_updates = _map(lambda s, g, step: jnp.where(s < 0, jnp.zeros_like(g),
                                                         step * jnp.sign(g)),
                            sign, updates, step_sizes)
        updates = _map(lambda s, g, prev: jnp.where(s < 0, jnp.zeros_like(prev), prev), sign,
                       prev_updates, state.prev_updates)
        return updates, ScaleByRpropState(step_sizes, prev_updates)

    return _base.GradientTransformation(init_fn, update_fn)


def scale_by_sign() -> _base.GradientTransformation:
    """Replaces the updates by their signs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.scale_by_sign().update(jnp.array([-3.0, 2.0]), optax.EmptyState())[0].tolist()
        [-1.0, 1.0]
    """

    def update_fn(updates, state, params=None):
        del params
        return _map(jnp.sign, updates), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


class ApplyEvery(NamedTuple):
    """State of :func:`apply_every`."""

    count: Any
    grad_acc: Any


def apply_every(k: int = 1) -> _base.GradientTransformation:
    """Accumulates updates and emits their sum every ``k`` steps (zeros in between).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.apply_every(2)
        >>> s = tx.init(jnp.zeros(1))
        >>> u, s = tx.update(jnp.ones(1), s); u, s = tx.update(jnp.ones(1), s); u.tolist()
        [2.0]
    """

    def init_fn(params):
        return ApplyEvery(jnp.zeros([], jnp.int32), tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        c = state.count % k
        acc = c != 0
        grad_acc = _map(lambda g, ga: acc * ga + g, updates, state.grad_acc)
        emit = c == k - 1
        updates = _map(lambda ga: emit * ga, grad_acc)
        return updates, ApplyEvery(safe_increment(state.count) % k, grad_acc)

    return _base.GradientTransformation(init_fn, update_fn)


def _subtract_mean(g: Any) -> Any:
    if g.ndim > 1:
        return g - g.mean(tuple(range(1, g.ndim)), keepdims=True)
    return g


def centralize() -> _base.GradientTransformation:
    """Gradient centralization: subtracts each multi-dimensional leaf's mean over all axes but
    the first.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.centralize().update(jnp.array([[1.0, 3.0]]), optax.EmptyState())[0].tolist()
        [[-1.0, 1.0]]
    """

    def update_fn(updates, state, params=None):
        del params
        return _map(_subtract_mean, updates), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)


class ScaleByOptimisticGradientState(NamedTuple):
    """State of :func:`scale_by_optimistic_gradient`."""

    is_initial_step: Any
    previous_gradient: Any


def scale_by_optimistic_gradient(alpha: Any = 1.0,
                                 beta: Any = 1.0) -> _base.GradientTransformation:
    """Optimistic gradient: ``(alpha + beta) * g - beta * g_prev``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_optimistic_gradient()
        >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0].tolist()
        [1.0]
    """

    def init_fn(params):
        return ScaleByOptimisticGradientState(jnp.array(True), tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params

        def f(grad, prev):
            prev = jnp.where(state.is_initial_step, grad, prev)
            return (alpha + beta) * grad - beta * prev

        new_updates = _map(f, updates, state.previous_gradient)
        return new_updates, ScaleByOptimisticGradientState(jnp.array(False), updates)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByDistanceOverGradientsState(NamedTuple):
    """State of :func:`scale_by_distance_over_gradients`."""

    max_dist: Any
    grad_sum_of_squares: Any
    init_params: Any


def scale_by_distance_over_gradients(reps_rel: Any = 1e-6, eps: Any = 1e-8,
                                     param_dtype: Any = jnp.float32,
                                     global_scale: Any = 1.0) -> _base.GradientTransformation:
    """DoG (distance over gradients): per-leaf step size ``max distance travelled /
    sqrt(sum of squared gradient norms)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_distance_over_gradients()
        >>> tx.update(jnp.ones(2), tx.init(jnp.ones(2)), jnp.ones(2))[0].shape
        (2,)
    """

    def l2(x, y=0.0):
        return jnp.sqrt(jnp.square(x - y).sum())

    def init_fn(params):
        return ScaleByDistanceOverGradientsState(
            _map(lambda x: reps_rel * (1 + l2(x)), params),
            _map(lambda x: jnp.zeros(1), params), tree_cast(params, param_dtype))

    def update_fn(updates, state, params=None):
        _need_params("scale_by_distance_over_gradients", params)
        max_dist = _map(lambda d, x, y: jnp.maximum(d, l2(x, y)), state.max_dist, params,
                        state.init_params)
        g_sos = _map(lambda x, y: x + jnp.square(y).sum(), state.grad_sum_of_squares, updates)
        updates = _map(lambda g, d, s: global_scale * (d / jnp.sqrt(s + eps)) * g, updates,
                       max_dist, g_sos)
        return updates, ScaleByDistanceOverGradientsState(max_dist, g_sos, state.init_params)

    return _base.GradientTransformation(init_fn, update_fn)


def scale_by_polyak(f_min: Any = 0.0, max_learning_rate: Any = 1.0, eps: Any = 0.0,
                    variant: str = "sps") -> _base.GradientTransformationExtraArgs:
    """The Polyak step size ``(f(x) - f_min) / |g|**2`` (capped); needs ``value=`` in
    ``update``. ``variant="sps+"`` clips negative gaps to zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_polyak()
        >>> tx.update(jnp.array([2.0]), tx.init(None), value=2.0)[0].tolist()
        [1.0]
    """
    if variant not in ("sps", "sps+"):
        raise ValueError(f"scale_by_polyak: invalid variant {variant!r}; expected 'sps' or "
                         "'sps+'")

    def update_fn(updates, state, params=None, *, value, **extra_args):
        del params, extra_args
        grad_sq_norm = tree_norm(updates, squared=True)
        gap = jnp.array(value - f_min).astype(grad_sq_norm.dtype)
        if variant == "sps+":
            gap = jnp.maximum(gap, 0)
        step = jnp.where(grad_sq_norm + eps <= jnp.finfo(float).eps, jnp.array(0.0),
                         jnp.minimum(gap / (grad_sq_norm + eps), max_learning_rate))
        return tree_scale(step, updates), state

    return _base.GradientTransformationExtraArgs(_base.init_empty_state, update_fn)


class ScaleByLBFGSState(NamedTuple):
    """State of :func:`scale_by_lbfgs`: the last params/updates and the memory of differences."""

    count: Any
    params: Any
    updates: Any
    diff_params_memory: Any
    diff_updates_memory: Any
    weights_memory: Any


def _precondition_by_lbfgs(updates: Any, dw_mem: Any, du_mem: Any, rhos: Any,
                           identity_scale: Any, memory_idx: Any) -> Any:
    memory_size = rhos.shape[0]
    indices = (memory_idx + jnp.arange(memory_size)) % memory_size

    def right(vec, idx):
        dwi, dui = _map(lambda x: x[idx], (dw_mem, du_mem))
        alpha = rhos[idx] * tree_real(tree_vdot(dwi, vec))
        return tree_cast_like(tree_add_scale(vec, -alpha, dui), vec), alpha

    precond, alphas = lax.scan(right, updates, indices, reverse=True)
    precond = tree_scale(identity_scale, precond)

    def left(vec, idx_alpha):
        idx, alpha = idx_alpha
        dwi, dui = _map(lambda x: x[idx], (dw_mem, du_mem))
        beta = rhos[idx] * tree_real(tree_vdot(dui, vec))
        return tree_cast_like(tree_add_scale(vec, alpha - beta, dwi), vec), beta

    precond, _ = lax.scan(left, precond, (indices, alphas))
    return precond


def scale_by_lbfgs(memory_size: int = 10,
                   scale_init_precond: bool = True) -> _base.GradientTransformation:
    """The L-BFGS preconditioner (two-loop recursion over the last ``memory_size`` steps).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_lbfgs()
        >>> tx.update(jnp.ones(2), tx.init(jnp.zeros(2)), jnp.zeros(2))[0].shape
        (2,)
    """
    if memory_size < 1:
        raise ValueError(f"scale_by_lbfgs: `memory_size` must be >= 1, got {memory_size}")

    def init_fn(params):
        stacked = _map(lambda leaf: jnp.zeros((memory_size,) + leaf.shape, dtype=leaf.dtype),
                       params)
        return ScaleByLBFGSState(jnp.asarray(0, dtype=jnp.int32), tree_zeros_like(params),
                                 tree_zeros_like(params), stacked, stacked,
                                 jnp.zeros(memory_size))

    def update_fn(updates, state, params=None):
        _need_params("scale_by_lbfgs", params)
        memory_idx = state.count % memory_size
        prev_idx = (state.count - 1) % memory_size
        diff_params = tree_sub(params, state.params)
        diff_updates = tree_sub(updates, state.updates)
        vdot = tree_real(tree_vdot(diff_updates, diff_params))
        weight = jnp.where(vdot == 0.0, 0.0, 1.0 / vdot)
        diff_params, diff_updates, weight = _map(
            lambda x: jnp.where(state.count > 0, x, jnp.zeros_like(x)),
            (diff_params, diff_updates, weight))
        dw_mem, du_mem, w_mem = _map(
            lambda x, y: x.at[prev_idx].set(y),
            (state.diff_params_memory, state.diff_updates_memory, state.weights_memory),
            (diff_params, diff_updates, weight))
        if scale_init_precond:
            numerator = tree_real(tree_vdot(diff_updates, diff_params))
            denominator = tree_norm(diff_updates, squared=True)
            identity_scale = jnp.where(denominator > 0.0, numerator / denominator, 1.0)
            update_norm = tree_norm(lax.stop_gradient(updates))
            capped_inv_norm = jnp.minimum(1.0, 1.0 / update_norm)
            identity_scale = jnp.where(state.count > 0, identity_scale, capped_inv_norm)
        else:
            identity_scale = 1.0
        precond = _precondition_by_lbfgs(updates, dw_mem, du_mem, w_mem, identity_scale,
                                         memory_idx)
        return precond, ScaleByLBFGSState(safe_increment(state.count), params, updates, dw_mem,
                                          du_mem, w_mem)

    return _base.GradientTransformation(init_fn, update_fn)


def normalize_by_update_norm(scale_factor: Any = 1.0,
                             eps: Any = 1e-6) -> _base.GradientTransformation:
    """Divides the updates by their global norm (plus ``eps``), times ``scale_factor``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.normalize_by_update_norm(eps=0.0)
        >>> tx.update(jnp.array([3.0, 4.0]), tx.init(None))[0].tolist()
        [0.6000000238418579, 0.800000011920929]
    """

    def update_fn(updates, state, params=None):
        del params
        g_norm = (tree_norm(updates) + eps) / scale_factor
        return _map(lambda g: g / g_norm, updates), state

    return _base.GradientTransformation(_base.init_empty_state, update_fn)
