"""Prodigy: Adam whose learning rate is estimated on the fly (distance to the solution)."""


from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim.tree_utils import tree_dtype, tree_sum, tree_vdot, tree_zeros_like

__all__ = ["ProdigyState", "prodigy"]


class ProdigyState(NamedTuple):
    """State of :func:`prodigy`."""

    exp_avg: Any
    exp_avg_sq: Any
    grad_sum: Any
    params0: Any
    estim_lr: Any
    numerator_weighted: Any
    count: Any


def prodigy(learning_rate: _base.ScalarOrSchedule = 1.0, betas: tuple[Any, Any] = (0.9, 0.999),
            beta3: Any = None, eps: Any = 1e-8, estim_lr0: Any = 1e-6, estim_lr_coef: Any = 1.0,
            weight_decay: Any = 0.0,
            safeguard_warmup: bool = False) -> _base.GradientTransformationExtraArgs:
    """The Prodigy optimizer (learning-rate-free Adam).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.prodigy()
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    beta1, beta2 = betas
    if beta3 is None:
        beta3 = beta2 ** 0.5

    def init_fn(params):
        dtype = tree_dtype(params, "lowest")
        return ProdigyState(tree_zeros_like(params), tree_zeros_like(params),
                            tree_zeros_like(params), params, jnp.asarray(estim_lr0, dtype=dtype),
                            jnp.zeros((), dtype=dtype), jnp.zeros((), jnp.int32))

    def update_fn(updates, state, params=None, **extra_args):
        del extra_args
        if params is None:
            raise ValueError("prodigy: " + _base.NO_PARAMS_MSG)
        count_inc = safe_increment(state.count)
        sched = learning_rate(state.count) if callable(learning_rate) else learning_rate
        estim_lr = state.estim_lr
        bc = (1 - beta2 ** count_inc) ** 0.5 / (1 - beta1 ** count_inc)
        dlr = jnp.asarray(estim_lr * sched * bc, dtype=estim_lr.dtype)
        dg = fluxion.tree.map(lambda g: estim_lr * g, updates)
        param_diff = fluxion.tree.map(lambda p0, p: p0 - p, state.params0, params)
        numerator_acum = tree_vdot(updates, param_diff)
        exp_avg = fluxion.tree.map(lambda ea, d: beta1 * ea + (1 - beta1) * d, state.exp_avg, dg)
        exp_avg_sq = fluxion.tree.map(lambda eas, d: beta2 * eas + (1 - beta2) * d * d,
                                      state.exp_avg_sq, dg)
        step = estim_lr if safeguard_warmup else dlr
        grad_sum = fluxion.tree.map(lambda sk, d: beta3 * sk + step * d / estim_lr0,
                                    state.grad_sum, dg)
        numerator = beta3 * state.numerator_weighted
        numerator = numerator + estim_lr / estim_lr0 * dlr * numerator_acum
        denominator = tree_sum(fluxion.tree.map(jnp.abs, grad_sum))
        estim_lr = jnp.maximum(state.estim_lr, estim_lr_coef * numerator / denominator)
        p_update = fluxion.tree.map(
            lambda ea, eas, p: -weight_decay * dlr * p - dlr * ea / (jnp.sqrt(eas) + estim_lr * eps),
            exp_avg, exp_avg_sq, params)
        return p_update, ProdigyState(exp_avg, exp_avg_sq, grad_sum, state.params0, estim_lr,
                                      numerator, count_inc)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)
