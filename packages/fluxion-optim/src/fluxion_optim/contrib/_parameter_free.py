"""Learning-rate-free optimizers from ``optax.contrib``: COCOB, D-Adaptation AdamW, DoG and
DoWG."""


from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim._scaling import scale_by_learning_rate
from fluxion_optim.transforms import add_decayed_weights, chain
from fluxion_optim.tree_utils import (
    tree_dtype,
    tree_norm,
    tree_ones_like,
    tree_scale,
    tree_sub,
    tree_sum,
    tree_vdot,
    tree_zeros_like,
)

__all__ = ["COCOBState", "DAdaptAdamWState", "DoGState", "DoWGState", "cocob", "dadapt_adamw",
           "dog", "dowg", "scale_by_cocob", "scale_by_dog", "scale_by_dowg"]

_map = fluxion.tree.map


class COCOBState(NamedTuple):
    """State of :func:`scale_by_cocob`."""

    init_particles: Any
    cumulative_gradients: Any
    scale: Any
    subgradients: Any
    reward: Any


def scale_by_cocob(alpha: Any = 100.0, eps: Any = 1e-8) -> _base.GradientTransformation:
    """COCOB-Backprop (coin betting): returns the full parameter step.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_cocob()
        >>> tx.update(jnp.ones(2), tx.init(jnp.zeros(2)), jnp.zeros(2))[0].shape
        (2,)
    """

    def init_fn(params):
        zeros = tree_zeros_like(params)
        return COCOBState(params, zeros, tree_scale(eps, tree_ones_like(params)), zeros, zeros)

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_cocob: " + _base.NO_PARAMS_MSG)
        p0, cum, scale, sub, reward = state
        scale = _map(lambda L, c: jnp.maximum(L, jnp.abs(c)), scale, updates)
        sub = _map(lambda G, c: G + jnp.abs(c), sub, updates)
        reward = _map(lambda R, c, p, q: jnp.maximum(R - c * (p - q), 0), reward, updates,
                      params, p0)
        cum = _map(lambda C, c: C - c, cum, updates)
        new = _map(lambda p, q, C, L, G, R: -p + (q + C / (L * jnp.maximum(G + L, alpha * L))
                                                  * (L + R)),
                   params, p0, cum, scale, sub, reward)
        return new, COCOBState(p0, cum, scale, sub, reward)

    return _base.GradientTransformation(init_fn, update_fn)


def cocob(learning_rate: _base.ScalarOrSchedule = 1.0, alpha: Any = 100.0, eps: Any = 1e-8,
          weight_decay: Any = 0.0, mask: Any = None) -> _base.GradientTransformation:
    """The COCOB optimizer (``learning_rate`` scales the gradients before betting).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.cocob()
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    return chain(add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate, flip_sign=False),
                 scale_by_cocob(alpha, eps))


class DAdaptAdamWState(NamedTuple):
    """State of :func:`dadapt_adamw`."""

    exp_avg: Any
    exp_avg_sq: Any
    grad_sum: Any
    estim_lr: Any
    numerator_weighted: Any
    count: Any


def dadapt_adamw(learning_rate: _base.ScalarOrSchedule = 1.0,
                 betas: tuple[Any, Any] = (0.9, 0.999), eps: Any = 1e-8,
                 estim_lr0: Any = 1e-6,
                 weight_decay: Any = 0.0) -> _base.GradientTransformationExtraArgs:
    """AdamW with D-Adaptation (the step size is estimated from the distance to the solution).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.dadapt_adamw()
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """

    def init_fn(params):
        dtype = tree_dtype(params, "lowest")
        return DAdaptAdamWState(tree_zeros_like(params), tree_zeros_like(params),
                                tree_zeros_like(params), jnp.asarray(estim_lr0, dtype=dtype),
                                jnp.zeros([], dtype=dtype), jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None, **extra_args):
        del extra_args
        if params is None:
            raise ValueError("dadapt_adamw: " + _base.NO_PARAMS_MSG)
        beta1, beta2 = betas
        sb2 = beta2 ** 0.5
        sched = learning_rate(state.count) if callable(learning_rate) else learning_rate
        count_inc = safe_increment(state.count)
        bc = (1 - beta2 ** count_inc) ** 0.5 / (1 - beta1 ** count_inc)
        dlr = (state.estim_lr * sched * bc).astype(state.numerator_weighted.dtype)
        s_weighted = _map(lambda sk, eas: sk / (jnp.sqrt(eas) + eps), state.grad_sum,
                          state.exp_avg_sq)
        numerator_acum = tree_vdot(updates, s_weighted)
        exp_avg = _map(lambda ea, g: beta1 * ea + (1 - beta1) * dlr * g, state.exp_avg, updates)
        exp_avg_sq = _map(lambda eas, g: beta2 * eas + (1 - beta2) * g * g, state.exp_avg_sq,
                          updates)
        grad_sum = _map(lambda sk, g: sb2 * sk + (1 - sb2) * dlr * g, state.grad_sum, updates)
        l1 = tree_sum(_map(jnp.abs, grad_sum))
        numerator = sb2 * state.numerator_weighted + (1 - sb2) * dlr * numerator_acum
        estim_lr = jnp.maximum(state.estim_lr, numerator / ((1 - sb2) * l1))
        p_update = _map(lambda ea, eas, p: -weight_decay * dlr * p - ea / (jnp.sqrt(eas) + eps),
                        exp_avg, exp_avg_sq, params)
        return p_update, DAdaptAdamWState(exp_avg, exp_avg_sq, grad_sum, estim_lr, numerator,
                                          count_inc)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


class DoGState(NamedTuple):
    """State of :func:`scale_by_dog`."""

    is_init_step: Any
    init_params: Any
    max_dist: Any
    sum_sq_norm_grads: Any


def scale_by_dog(init_step: tuple[str, Any], eps: Any = 1e-8) -> _base.GradientTransformation:
    """DoG (distance over gradients): a global step size ``max distance from the initial
    params / sqrt(sum of squared gradient norms)``. ``init_step`` is ``("distance", r)``,
    ``("heuristic", c)`` (``r = c * (1 + |params|)``) or ``("learning_rate", lr)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_dog(("heuristic", 1e-6))
        >>> tx.update(jnp.ones(2), tx.init(jnp.ones(2)), jnp.ones(2))[0].shape
        (2,)
    """
    kind, value = init_step
    if kind not in ("distance", "heuristic", "learning_rate"):
        raise ValueError(f"scale_by_dog: `init_step` kind must be 'distance', 'heuristic' or "
                         f"'learning_rate', got {kind!r}")

    def init_fn(params):
        dtype = tree_dtype(params, "lowest")
        if kind == "distance":
            r = value
        elif kind == "heuristic":
            r = value * (1 + tree_norm(params))
        else:
            r = 0.0
        return DoGState(jnp.asarray(True), params, jnp.asarray(r, dtype=dtype),
                        jnp.asarray(0.0, dtype=dtype))

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_dog: " + _base.NO_PARAMS_MSG)
        max_dist = jnp.maximum(state.max_dist, tree_norm(tree_sub(state.init_params, params)))
        sum_sq = state.sum_sq_norm_grads + tree_norm(updates, squared=True)
        lr = max_dist / jnp.sqrt(sum_sq + eps)
        if kind == "learning_rate":
            lr = jnp.where(state.is_init_step, value, lr)
        return tree_scale(lr, updates), DoGState(jnp.asarray(False), state.init_params,
                                                 max_dist, sum_sq)

    return _base.GradientTransformation(init_fn, update_fn)


def dog(learning_rate: _base.ScalarOrSchedule = 1.0,
        init_step: tuple[str, Any] = ("heuristic", 1e-6), eps: Any = 1e-8,
        weight_decay: Any = None, mask: Any = None) -> _base.GradientTransformationExtraArgs:
    """The DoG optimizer (learning-rate-free SGD).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.dog()
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.ones(2)), jnp.ones(2))
    """
    first = (add_decayed_weights(weight_decay, mask) if weight_decay is not None
             else _base.identity())
    return chain(first, scale_by_dog(init_step, eps), scale_by_learning_rate(learning_rate))


class DoWGState(NamedTuple):
    """State of :func:`scale_by_dowg`."""

    init_params: Any
    weighted_sq_norm_grads: Any
    estim_sq_dist: Any


def scale_by_dowg(init_estim_sq_dist: Any = None,
                  eps: Any = 1e-4) -> _base.GradientTransformation:
    """DoWG (distance over weighted gradients): like DoG with gradients weighted by the
    estimated squared distance.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_dowg()
        >>> tx.update(jnp.ones(2), tx.init(jnp.ones(2)), jnp.ones(2))[0].shape
        (2,)
    """

    def init_fn(params):
        dtype = tree_dtype(params, "lowest")
        init = eps if init_estim_sq_dist is None else init_estim_sq_dist
        return DoWGState(params, jnp.asarray(0.0, dtype=dtype), jnp.asarray(init, dtype=dtype))

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_dowg: " + _base.NO_PARAMS_MSG)
        dist = tree_norm(tree_sub(state.init_params, params), squared=True)
        estim = jnp.maximum(state.estim_sq_dist, dist)
        weighted = estim * tree_norm(updates, squared=True) + state.weighted_sq_norm_grads
        lr = estim / (jnp.sqrt(weighted) + eps)
        return tree_scale(lr, updates), state._replace(estim_sq_dist=estim,
                                                       weighted_sq_norm_grads=weighted)

    return _base.GradientTransformation(init_fn, update_fn)


def dowg(learning_rate: _base.ScalarOrSchedule = 1.0, init_estim_sq_dist: Any = None,
         eps: Any = 1e-4, weight_decay: Any = None,
         mask: Any = None) -> _base.GradientTransformationExtraArgs:
    """The DoWG optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.dowg()
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.ones(2)), jnp.ones(2))
    """
    first = (add_decayed_weights(weight_decay, mask) if weight_decay is not None
             else _base.identity())
    return chain(first, scale_by_dowg(init_estim_sq_dist, eps),
                 scale_by_learning_rate(learning_rate))
