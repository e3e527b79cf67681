"""AdEMAMix: Adam with a second, slow momentum mixed into the update."""


from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim._scaling import scale_by_learning_rate
from fluxion_optim.transforms import add_decayed_weights, chain
from fluxion_optim.tree_utils import (
    tree_add_scale,
    tree_bias_correction,
    tree_div,
    tree_mul,
    tree_sub,
    tree_update_moment,
    tree_update_moment_per_elem_norm,
    tree_zeros_like,
)

__all__ = ["ScaleByAdemamixState", "ScaleBySimplifiedAdEMAMixState", "ademamix",
           "scale_by_ademamix", "scale_by_simplified_ademamix", "simplified_ademamix"]


class ScaleByAdemamixState(NamedTuple):
    """State of :func:`scale_by_ademamix`."""

    count: Any
    count_m2: Any
    m1: Any
    m2: Any
    nu: Any


def scale_by_ademamix(b1: Any = 0.9, b2: Any = 0.999, b3: _base.ScalarOrSchedule = 0.9999,
                      alpha: _base.ScalarOrSchedule = 6.0, eps: Any = 1e-8, eps_root: Any = 0.0,
                      mu_dtype: Any = None) -> _base.GradientTransformation:
    """AdEMAMix's preconditioner: ``(m1_hat + alpha * m2) / (sqrt(nu_hat) + eps)`` with a fast
    (``b1``) and a slow (``b3``) momentum; ``b3`` and ``alpha`` may be schedules.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_ademamix()
        >>> tx.update(jnp.ones(2), tx.init(jnp.zeros(2)))[0].shape
        (2,)
    """
    mu_dtype = None if mu_dtype is None else fluxion.dtypes.canonicalize_dtype(mu_dtype)

    def init_fn(params):
        z = lambda: tree_zeros_like(params, dtype=mu_dtype)  # noqa: E731
        return ScaleByAdemamixState(jnp.zeros([], jnp.int32), jnp.zeros([], jnp.int32), z(), z(),
                                    z())

    def update_fn(updates, state, params=None):
        del params
        c_b3 = b3(state.count_m2) if callable(b3) else b3
        c_alpha = alpha(state.count_m2) if callable(alpha) else alpha
        m1 = tree_update_moment(updates, state.m1, b1, order=1)
        m2 = tree_update_moment(updates, state.m2, c_b3, order=1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2, order=2)
        count_inc = safe_increment(state.count)
        m1_hat = tree_bias_correction(m1, b1, count_inc)
        nu_hat = tree_bias_correction(nu, b2, count_inc)
        updates = fluxion.tree.map(
            lambda a, b, v: (a + c_alpha * b) / (jnp.sqrt(v + eps_root) + eps), m1_hat, m2, nu_hat)
        return updates, ScaleByAdemamixState(count_inc, safe_increment(state.count_m2), m1, m2,
                                             nu)

    return _base.GradientTransformation(init_fn, update_fn)


def ademamix(learning_rate: _base.ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999,
             b3: _base.ScalarOrSchedule = 0.9999, alpha: _base.ScalarOrSchedule = 5.0,
             eps: Any = 1e-8, eps_root: Any = 0.0, mu_dtype: Any = None,
             weight_decay: Any = 0.0, mask: Any = None) -> _base.GradientTransformation:
    """The AdEMAMix optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.ademamix(0.1)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    return chain(scale_by_ademamix(b1=b1, b2=b2, b3=b3, alpha=alpha, eps=eps, eps_root=eps_root,
                                   mu_dtype=mu_dtype),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


class ScaleBySimplifiedAdEMAMixState(NamedTuple):
    """State of :func:`scale_by_simplified_ademamix`."""

    t: Any
    m: Any
    n: Any


def scale_by_simplified_ademamix(b1: Any = 0.99, b2: Any = 0.95,
                                 alpha: _base.ScalarOrSchedule = 0.0, eps: Any = 1e-8,
                                 eps_root: Any = 0.0) -> _base.GradientTransformation:
    """Simplified AdEMAMix's preconditioner (one accumulated momentum, no fast EMA).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_simplified_ademamix()
        >>> tx.update(jnp.ones(2), tx.init(jnp.zeros(2)))[0].shape
        (2,)
    """

    def init_fn(params):
        return ScaleBySimplifiedAdEMAMixState(jnp.array(0, jnp.int32), tree_zeros_like(params),
                                              tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        c_alpha = alpha(state.t) if callable(alpha) else alpha
        g = updates
        m = tree_add_scale(g, b1, state.m)
        sq = tree_mul(g, g)
        n = tree_add_scale(sq, b2, tree_sub(state.n, sq))
        t = safe_increment(state.t)
        n_hat = tree_bias_correction(n, b2, t)
        den = fluxion.tree.map(lambda v: jnp.sqrt(v + eps_root) + eps, n_hat)
        return (tree_div(tree_add_scale(m, c_alpha, g), den),
                ScaleBySimplifiedAdEMAMixState(t, m, n))

    return _base.GradientTransformation(init_fn, update_fn)


def simplified_ademamix(learning_rate: _base.ScalarOrSchedule, b1: Any = 0.99, b2: Any = 0.95,
                        alpha: _base.ScalarOrSchedule = 0.0, eps: Any = 1e-8,
                        eps_root: Any = 0.0, weight_decay: Any = 0.0,
                        mask: Any = None) -> _base.GradientTransformation:
    """The simplified AdEMAMix optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.contrib.simplified_ademamix(0.1)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    return chain(scale_by_simplified_ademamix(b1=b1, b2=b2, alpha=alpha, eps=eps,
                                              eps_root=eps_root),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))
