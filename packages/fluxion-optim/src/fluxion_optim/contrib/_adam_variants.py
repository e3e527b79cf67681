"""Adam-family optimizers from ``optax.contrib``: ADOPT, ACProp and MADGRAD."""


from collections.abc import Callable
from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base
from fluxion_optim._adaptive import ScaleByAdamState, ScaleByBeliefState
from fluxion_optim._numerics import safe_increment
from fluxion_optim._scaling import scale_by_learning_rate
from fluxion_optim.transforms import add_decayed_weights, chain
from fluxion_optim.tree_utils import (
    tree_bias_correction,
    tree_cast,
    tree_update_moment,
    tree_update_moment_per_elem_norm,
    tree_zeros_like,
)

__all__ = ["MadgradState", "acprop", "adopt", "madgrad", "scale_by_acprop", "scale_by_adopt",
           "scale_by_madgrad"]

_map = fluxion.tree.map


def _quarter_power(x: Any) -> Any:
    return x ** 0.25


def scale_by_adopt(b1: Any = 0.9, b2: Any = 0.9999, eps: Any = 1e-6, mu_dtype: Any = None, *,
                   nesterov: bool = False, use_clipping: bool = True,
                   clip_value_fn: Callable[[Any], Any] = _quarter_power
                   ) -> _base.GradientTransformation:
    """ADOPT's preconditioner: the gradient is normalized by the *previous* second moment
    before it enters the momentum (optionally clipped to ``clip_value_fn(step)``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_adopt()
        >>> tx.update(jnp.ones(2), tx.init(jnp.zeros(2)))[0].shape
        (2,)
    """
    mu_dtype = None if mu_dtype is None else fluxion.dtypes.canonicalize_dtype(mu_dtype)

    def init_fn(params):
        return ScaleByAdamState(jnp.zeros([], jnp.int32), tree_zeros_like(params, dtype=mu_dtype),
                                tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        b2_ = jnp.where(state.count > 0, b2, 0)
        b1_ = jnp.where(state.count > 0, b1, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2_, 2)
        if use_clipping:
            c = clip_value_fn(state.count)
            mu_updates = _map(lambda u, n: jnp.clip(u / jnp.maximum(jnp.sqrt(n), eps), -c, c),
                              updates, state.nu)
        else:
            mu_updates = _map(lambda u, n: u / jnp.maximum(jnp.sqrt(n), eps), updates, state.nu)
        mu = tree_update_moment(mu_updates, state.mu, b1_, 1)
        out = tree_update_moment(mu_updates, mu, b1_, 1) if nesterov else mu
        return out, ScaleByAdamState(safe_increment(state.count), tree_cast(mu, mu_dtype), nu)

    return _base.GradientTransformation(init_fn, update_fn)


def adopt(learning_rate: _base.ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.9999,
          eps: Any = 1e-6, mu_dtype: Any = None, *, nesterov: bool = False,
          use_clipping: bool = True,
          clip_value_fn: Callable[[Any], Any] = _quarter_power
          ) -> _base.GradientTransformationExtraArgs:
    """The ADOPT optimizer (Adam that converges for any ``b2``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.adopt(0.1)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)))
    """
    return chain(scale_by_adopt(b1=b1, b2=b2, eps=eps, mu_dtype=mu_dtype, nesterov=nesterov,
                                use_clipping=use_clipping, clip_value_fn=clip_value_fn),
                 scale_by_learning_rate(learning_rate))


def scale_by_acprop(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-16,
                    eps_root: Any = 1e-16) -> _base.GradientTransformation:
    """ACProp's preconditioner: the gradient over the root of the previous (bias-corrected)
    second moment of the prediction error.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_acprop()
        >>> tx.update(jnp.ones(2), tx.init(jnp.zeros(2)))[0].shape
        (2,)
    """

    def init_fn(params):
        return ScaleByBeliefState(jnp.zeros([], jnp.int32), tree_zeros_like(params),
                                  tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        err = _map(lambda g, m: g - m, updates, state.mu)
        nu = tree_update_moment_per_elem_norm(err, state.nu, b2, 2)
        nu = _map(lambda v: v + eps_root, nu)
        count_inc = safe_increment(state.count)
        initial = state.count == 0
        t = jnp.where(initial, count_inc, state.count)
        nu_hat = _map(lambda x: jnp.where(initial, 1, x), tree_bias_correction(state.nu, b2, t))
        updates = _map(lambda g, v: g / (jnp.sqrt(v) + eps), updates, nu_hat)
        return updates, ScaleByBeliefState(count_inc, mu, nu)

    return _base.GradientTransformation(init_fn, update_fn)


def acprop(learning_rate: _base.ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999,
           eps: Any = 1e-16, eps_root: Any = 1e-16, weight_decay: Any = 0.0,
           mask: Any = None) -> _base.GradientTransformation:
    """The ACProp optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.acprop(0.1)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    return chain(scale_by_acprop(b1=b1, b2=b2, eps=eps, eps_root=eps_root),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


class MadgradState(NamedTuple):
    """State of :func:`scale_by_madgrad`."""

    count: Any
    grad_sum_sq: Any
    s: Any
    x0: Any


def scale_by_madgrad(learning_rate: _base.ScalarOrSchedule, momentum: float = 0.9,
                     eps: float = 1e-6) -> _base.GradientTransformation:
    """MADGRAD's update (dual averaging with cube-root scaling and momentum); returns the full
    parameter step.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_madgrad(0.1)
        >>> tx.update(jnp.ones(2), tx.init(jnp.zeros(2)), jnp.zeros(2))[0].shape
        (2,)
    """

    def init_fn(params):
        return MadgradState(jnp.zeros([], jnp.int32), tree_zeros_like(params),
                            tree_zeros_like(params), _map(lambda x: x, params))

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("scale_by_madgrad: " + _base.NO_PARAMS_MSG)
        lr = learning_rate(state.count) if callable(learning_rate) else learning_rate
        lamb = (lr + eps) * jnp.sqrt(state.count + 1)
        grad_sum_sq = _map(lambda s, g: s + (lamb * g ** 2).astype(g.dtype), state.grad_sum_sq,
                           updates)
        s = _map(lambda s_, g: s_ + (lamb * g).astype(g.dtype), state.s, updates)
        sigma = _map(lambda g2: jnp.cbrt(g2) + eps, grad_sum_sq)
        z = _map(lambda x0, s_, sig: x0 - s_ / sig, state.x0, s, sigma)
        x_new = _map(lambda z_, x: (1 - momentum) * z_ + momentum * x, z, params)
        return (_map(lambda n, o: n - o, x_new, params),
                MadgradState(safe_increment(state.count), grad_sum_sq, s, state.x0))

    return _base.GradientTransformation(init_fn, update_fn)


def madgrad(learning_rate: _base.ScalarOrSchedule, momentum: float = 0.9,
            weight_decay: float = 0.0, eps: float = 1e-6) -> _base.GradientTransformation:
    """The MADGRAD optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.madgrad(0.1)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    return chain(add_decayed_weights(weight_decay),
                 scale_by_madgrad(learning_rate=learning_rate, momentum=momentum, eps=eps))
