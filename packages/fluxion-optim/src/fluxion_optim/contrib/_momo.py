"""MoMo and MoMo-Adam (Schaipp et al. 2023): momentum with a Polyak-type step size that uses the
loss value and a lower bound of the loss."""

from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim.tree_utils import tree_dtype, tree_norm, tree_vdot, tree_zeros_like

__all__ = ["MomoAdamState", "MomoState", "momo", "momo_adam"]

_NO_VALUE = ("You need to pass the latest loss value to Momo.\n"
             "                       Use ``jax.value_and_grad`` for this.")


class MomoState(NamedTuple):
    """State of :func:`momo`: the gradient average, the averaged loss ``barf``, the averaged
    ``<grad, params>`` ``gamma``, the loss lower bound ``lb`` and the step count."""

    exp_avg: Any
    barf: Any
    gamma: Any
    lb: Any
    count: Any


class MomoAdamState(NamedTuple):
    """State of :func:`momo_adam`: as :class:`MomoState` plus Adam's second moment."""

    exp_avg: Any
    exp_avg_sq: Any
    barf: Any
    gamma: Any
    lb: Any
    count: Any


def _check_update_args(fn: str, params: Any, value: Any) -> None:
    if params is None:
        raise ValueError(_base.NO_PARAMS_MSG + f" ({fn}.update)")
    if value is None:
        raise ValueError(_NO_VALUE + f" ({fn}.update needs value=loss)")


def _lr(learning_rate: Any, count: Any) -> Any:
    return learning_rate(count) if callable(learning_rate) else learning_rate


def _init_scalars(params: Any, lower_bound: Any) -> tuple[Any, Any, Any, Any]:
    # scalars in the parameters' lowest dtype, so that nothing gets promoted
    dtype = tree_dtype(params, "lowest")
    return (jnp.zeros([], dtype=dtype), jnp.zeros([], dtype=dtype),
            jnp.array(lower_bound, dtype=dtype), jnp.zeros([], jnp.int32))


def momo(learning_rate: _base.ScalarOrSchedule = 1.0, beta: Any = 0.9, lower_bound: Any = 0.0,
         weight_decay: Any = 0.0, adapt_lower_bound: bool = False,
         ) -> _base.GradientTransformationExtraArgs:
    """MoMo: SGD with momentum whose step is ``min(learning_rate, Polyak step)``, from the loss
    ``value`` (pass ``value=`` to ``update``) and a ``lower_bound`` of the loss.

    Example:
        >>> import fluxion
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> f = lambda x: jnp.sum(x ** 2)
        >>> tx = optax.contrib.momo()
        >>> params = jnp.array([1.0, 2.0, 3.0])
        >>> value, grad = fluxion.value_and_grad(f)(params)
        >>> updates, state = tx.update(grad, tx.init(params), params, value=value)
        >>> float(f(optax.apply_updates(params, updates)))
        3.5
    """

    def init_fn(params: Any) -> MomoState:
        barf, gamma, lb, count = _init_scalars(params, lower_bound)
        return MomoState(tree_zeros_like(params), barf, gamma, lb, count)

    def update_fn(updates: Any, state: MomoState, params: Any = None, *, value: Any = None,
                  **extra_args: Any) -> tuple[Any, MomoState]:
        del extra_args
        _check_update_args("momo", params, value)
        count = state.count
        bt = jnp.where(count == 0, 0.0, beta)  # the first step takes the values as they are
        barf = bt * state.barf + (1 - bt) * jnp.asarray(value, dtype=state.barf.dtype)
        exp_avg = fluxion.tree.map(lambda m, g: bt * m + (1 - bt) * g, state.exp_avg, updates)
        gamma = bt * state.gamma + (1 - bt) * tree_vdot(updates, params)
        avg_sq_norm = tree_norm(exp_avg, squared=True)
        iprod = tree_vdot(exp_avg, params)
        alpha = _lr(learning_rate, count)
        decay = 1 + alpha * weight_decay
        if adapt_lower_bound:
            cap = decay * (barf - gamma) + iprod
            lb = lax.cond(cap < decay * state.lb,
                          lambda: jnp.maximum(cap / (2 * decay), lower_bound),
                          lambda: state.lb)
        else:
            lb = state.lb
        polyak = jnp.maximum(decay * (barf - lb - gamma) + iprod, 0.0) / avg_sq_norm
        polyak = jnp.where(avg_sq_norm <= jnp.finfo(float).eps, 0.0, polyak)  # no direction
        tau = jnp.minimum(alpha, polyak)
        new_updates = fluxion.tree.map(
            lambda m, p: -(alpha * weight_decay) / decay * p - tau * m, exp_avg, params)
        if adapt_lower_bound:
            lb = jnp.maximum((barf + iprod - gamma) - 0.5 * tau * avg_sq_norm, lower_bound)
        else:
            lb = state.lb
        return new_updates, MomoState(exp_avg, barf, gamma, lb, safe_increment(count))

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


def momo_adam(learning_rate: _base.ScalarOrSchedule = 1e-2, b1: Any = 0.9, b2: Any = 0.999,
              eps: Any = 1e-8, lower_bound: Any = 0.0, weight_decay: Any = 0.0,
              adapt_lower_bound: bool = False) -> _base.GradientTransformationExtraArgs:
    """MoMo-Adam: Adam's preconditioned momentum with MoMo's Polyak-type step size (pass
    ``value=`` to ``update``).

    Example:
        >>> import fluxion
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> f = lambda x: jnp.sum(x ** 2)
        >>> tx = optax.contrib.momo_adam(0.1)
        >>> params = jnp.array([1.0, 2.0, 3.0])
        >>> value, grad = fluxion.value_and_grad(f)(params)
        >>> updates, state = tx.update(grad, tx.init(params), params, value=value)
        >>> updates.shape
        (3,)
    """

    def init_fn(params: Any) -> MomoAdamState:
        barf, gamma, lb, count = _init_scalars(params, lower_bound)
        return MomoAdamState(tree_zeros_like(params), tree_zeros_like(params), barf, gamma, lb,
                             count)

    def update_fn(updates: Any, state: MomoAdamState, params: Any = None, *, value: Any = None,
                  **extra_args: Any) -> tuple[Any, MomoAdamState]:
        del extra_args
        _check_update_args("momo_adam", params, value)
        count_inc = safe_increment(state.count)
        barf = b1 * state.barf + (1 - b1) * jnp.asarray(value, dtype=state.barf.dtype)
        exp_avg = fluxion.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state.exp_avg, updates)
        exp_avg_sq = fluxion.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g,
                                      state.exp_avg_sq, updates)
        bc2 = jnp.asarray(1 - b2 ** count_inc, dtype=barf.dtype)
        precond = fluxion.tree.map(lambda v: eps + jnp.sqrt(v / bc2), exp_avg_sq)
        weighted = fluxion.tree.map(lambda m, d: m / d, exp_avg, precond)
        avg_norm = tree_vdot(exp_avg, weighted)
        gamma = b1 * state.gamma + (1 - b1) * tree_vdot(updates, params)
        iprod = tree_vdot(exp_avg, params)
        alpha = _lr(learning_rate, state.count)
        bc1 = jnp.asarray(1 - b1 ** count_inc, dtype=barf.dtype)
        decay = 1 + alpha * weight_decay
        if adapt_lower_bound:
            cap = decay * (barf - gamma) + iprod
            lb = jnp.where(cap < decay * bc1 * state.lb,
                           jnp.maximum(cap / (2 * bc1 * decay), lower_bound), state.lb)
        else:
            lb = state.lb
        polyak = jnp.maximum(decay * (barf - bc1 * lb - gamma) + iprod, 0.0) / avg_norm
        polyak = jnp.where(avg_norm <= jnp.finfo(float).eps, 0.0, polyak)
        tau = jnp.minimum(alpha / bc1, polyak)
        new_updates = fluxion.tree.map(
            lambda m, d, p: -(alpha * weight_decay) / decay * p - tau * m / d,
            exp_avg, precond, params)
        if adapt_lower_bound:
            lb = jnp.maximum(((barf + iprod - gamma) - 0.5 * tau * avg_norm) / bc1, lower_bound)
        else:
            lb = state.lb
        return new_updates, MomoAdamState(exp_avg, exp_avg_sq, barf, gamma, lb, count_inc)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)
