"""Multi-step returns: lambda-returns, n-step, GAE and general off-policy returns."""

from __future__ import annotations

from typing import Any

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_rl import _checks
from fluxion_rl._base import batched_index, maybe_stop_gradient

Array = Any

__all__ = [
    "lambda_returns",
    "n_step_bootstrapped_returns",
    "discounted_returns",
    "importance_corrected_td_errors",
    "truncated_generalized_advantage_estimation",
    "general_off_policy_returns_from_action_values",
    "general_off_policy_returns_from_q_and_v",
]


def lambda_returns(r_t: Array, discount_t: Array, v_t: Array, lambda_: Any = 1.0,
                   stop_target_gradients: bool = False) -> Array:
    """Lambda-returns ``G_t = r_t + d_t ((1 - l) v_t + l G_{t+1})``, bootstrapped from ``v_t[-1]``.

    Shapes: ``r_t, discount_t, v_t`` are [T]; ``lambda_`` a scalar or [T]. Returns [T].
    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rlax.lambda_returns(r, d, v, 0.95).tolist()
        [2.52302, 1.755, 2.0]
    """
    fn = "lambda_returns"
    _checks.ranks(fn, r_t=(r_t, 1), discount_t=(discount_t, 1), v_t=(v_t, 1), lambda_=(lambda_, {0, 1}))
    _checks.kinds(fn, r_t=(r_t, "float"), discount_t=(discount_t, "float"), v_t=(v_t, "float"),
                  lambda_=(lambda_, "float"))
    _checks.same_shape(fn, {"r_t": r_t, "discount_t": discount_t, "v_t": v_t})
    lambda_ = jnp.ones_like(discount_t) * lambda_

    def body(acc, xs):
        r, d, v, lam = xs
        acc = r + d * ((1 - lam) * v + lam * acc)
        return acc, acc

    _, returns = lax.scan(body, v_t[-1], (r_t, discount_t, v_t, lambda_), reverse=True)
    return maybe_stop_gradient(stop_target_gradients, returns)


def n_step_bootstrapped_returns(r_t: Array, discount_t: Array, v_t: Array, n: int,
                                lambda_t: Any = 1.0, stop_target_gradients: bool = False) -> Array:
    """Strided n-step returns (mixed with lambda), bootstrapped from ``v_t`` n steps ahead.

    Shapes: ``r_t, discount_t, v_t`` are [T]. Returns [T].
    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rlax.n_step_bootstrapped_returns(r, d, v, n=2).tolist()
        [1.81, 1.8, 2.0]
    """
    fn = "n_step_bootstrapped_returns"
    _checks.ranks(fn, r_t=(r_t, 1), discount_t=(discount_t, 1), v_t=(v_t, 1), lambda_t=(lambda_t, {0, 1}))
    _checks.kinds(fn, r_t=(r_t, "float"), discount_t=(discount_t, "float"), v_t=(v_t, "float"),
                  lambda_t=(lambda_t, "float"))
    _checks.same_shape(fn, {"r_t": r_t, "discount_t": discount_t, "v_t": v_t})
    seq_len = r_t.shape[0]
    lambda_t = jnp.ones_like(discount_t) * lambda_t
    pad = min(n - 1, seq_len)
    last = v_t[-1]
    targets = jnp.concatenate([v_t[n - 1:], jnp.broadcast_to(last, (pad,))])
    r_pad = jnp.concatenate([r_t, jnp.zeros(n - 1)])
    d_pad = jnp.concatenate([discount_t, jnp.ones(n - 1)])
    l_pad = jnp.concatenate([lambda_t, jnp.ones(n - 1)])
    v_pad = jnp.concatenate([v_t, jnp.broadcast_to(last, (n - 1,))])
    for i in reversed(range(n)):
        r_ = r_pad[i:i + seq_len]
        d_ = d_pad[i:i + seq_len]
        l_ = l_pad[i:i + seq_len]
        v_ = v_pad[i:i + seq_len]
        targets = r_ + d_ * ((1.0 - l_) * v_ + l_ * targets)
    return maybe_stop_gradient(stop_target_gradients, targets)


def discounted_returns(r_t: Array, discount_t: Array, v_t: Array,
                       stop_target_gradients: bool = False) -> Array:
    """Discounted returns bootstrapped from ``v_t`` (a scalar or [T], only the last one is used).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rlax.discounted_returns(r, d, v).tolist()
        [2.62, 1.8, 2.0]
    """
    fn = "discounted_returns"
    _checks.ranks(fn, r_t=(r_t, 1), discount_t=(discount_t, 1), v_t=(v_t, {0, 1}))
    _checks.kinds(fn, r_t=(r_t, "float"), discount_t=(discount_t, "float"), v_t=(v_t, "float"))
    bootstrapped_v = jnp.ones_like(discount_t) * v_t
    return lambda_returns(r_t, discount_t, bootstrapped_v, lambda_=1.0,
                          stop_target_gradients=stop_target_gradients)


def importance_corrected_td_errors(r_t: Array, discount_t: Array, rho_tm1: Array, lambda_: Array,
                                   values: Array, stop_target_gradients: bool = False) -> Array:
    """Off-policy importance-corrected TD errors (``values`` is [T+1], the others [T]).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> from fluxion_rl._src import multistep
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rho = jnp.array([1.0, 0.5, 2.0])
        >>> multistep.importance_corrected_td_errors(r, d, rho, jnp.full(3, 0.9), jnp.array([0.2, 0.5, 1.0, 1.5])).tolist()
        [2.0681, 1.01, 2.0]
    """
    fn = "importance_corrected_td_errors"
    _checks.ranks(fn, r_t=(r_t, 1), discount_t=(discount_t, 1), rho_tm1=(rho_tm1, 1), values=(values, 1))
    _checks.kinds(fn, r_t=(r_t, "float"), discount_t=(discount_t, "float"),
                  rho_tm1=(rho_tm1, "float"), values=(values, "float"))
    _checks.same_shape(fn, {"r_t": r_t, "discount_t": discount_t, "rho_tm1": rho_tm1, "values[1:]": values[1:]})
    v_tm1 = values[:-1]
    v_t = values[1:]
    rho_t = jnp.concatenate((rho_tm1[1:], jnp.array([1.0])))
    lambda_ = jnp.ones_like(discount_t) * lambda_
    delta = r_t + discount_t * v_t - v_tm1

    def body(acc, xs):
        dl, d, rho, lam = xs
        acc = dl + d * rho * lam * acc
        return acc, acc

    _, errors = lax.scan(body, 0.0, (delta, discount_t, rho_t, lambda_), reverse=True)
    errors = rho_tm1 * errors
    if stop_target_gradients is True:
        return lax.stop_gradient(errors + v_tm1) - v_tm1
    if stop_target_gradients is False:
        return errors
    return jnp.where(stop_target_gradients, lax.stop_gradient(errors + v_tm1) - v_tm1, errors)


def truncated_generalized_advantage_estimation(r_t: Array, discount_t: Array, lambda_: Any,
                                               values: Array,
                                               stop_target_gradients: bool = False) -> Array:
    """Generalised advantage estimates over a truncated trajectory (``values`` is [T+1]).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rlax.truncated_generalized_advantage_estimation(r, d, 0.95, jnp.array([0.2, 0.5, 1.0, 1.5])).tolist()
        [2.32302, 1.255, 1.0]
    """
    fn = "truncated_generalized_advantage_estimation"
    _checks.ranks(fn, r_t=(r_t, 1), values=(values, 1), discount_t=(discount_t, 1))
    _checks.kinds(fn, r_t=(r_t, "float"), values=(values, "float"), discount_t=(discount_t, "float"))
    _checks.same_shape(fn, {"r_t": r_t, "discount_t": discount_t, "values[1:]": values[1:]})
    lambda_ = jnp.ones_like(discount_t) * lambda_
    delta_t = r_t + discount_t * values[1:] - values[:-1]

    def body(acc, xs):
        dl, d, lam = xs
        acc = dl + d * lam * acc
        return acc, acc

    _, advantage_t = lax.scan(body, 0.0, (delta_t, discount_t, lambda_), reverse=True)
    return maybe_stop_gradient(stop_target_gradients, advantage_t)


def general_off_policy_returns_from_action_values(q_t: Array, a_t: Array, r_t: Array,
                                                  discount_t: Array, c_t: Array, pi_t: Array,
                                                  stop_target_gradients: bool = False) -> Array:
    """General off-policy returns from action values ``q_t`` [T, A] and target policy ``pi_t``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> q = jnp.array([[1.0, 2.0], [0.5, 1.5], [2.0, 0.0]])
        >>> pi = jnp.array([[0.5, 0.5], [0.2, 0.8], [1.0, 0.0]])
        >>> rlax.general_off_policy_returns_from_action_values(q, jnp.array([0, 1, 0]), r, d, jnp.ones(3), pi).tolist()
        [2.908, 1.62, 2.0]
    """
    fn = "general_off_policy_returns_from_action_values"
    _checks.ranks(fn, q_t=(q_t, 2), a_t=(a_t, 1), r_t=(r_t, 1), discount_t=(discount_t, 1),
                  c_t=(c_t, 1), pi_t=(pi_t, 2))
    _checks.kinds(fn, q_t=(q_t, "float"), a_t=(a_t, "int"), r_t=(r_t, "float"),
                  discount_t=(discount_t, "float"), c_t=(c_t, "float"), pi_t=(pi_t, "float"))
    _checks.same_shape(fn, {"q_t[..., 0]": q_t[..., 0], "a_t": a_t, "r_t": r_t, "discount_t": discount_t, "c_t": c_t, "pi_t[..., 0]": pi_t[..., 0]})
    exp_q_t = (pi_t * q_t).sum(axis=-1)
    q_a_t = batched_index(q_t, a_t)[:-1]
    return general_off_policy_returns_from_q_and_v(q_a_t, exp_q_t, r_t, discount_t, c_t[:-1],
                                                   stop_target_gradients)


def general_off_policy_returns_from_q_and_v(q_t: Array, v_t: Array, r_t: Array, discount_t: Array,
                                            c_t: Array, stop_target_gradients: bool = False) -> Array:
    """General off-policy returns from ``q_t`` [T-1], ``v_t`` [T], traces ``c_t`` [T-1].

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rlax.general_off_policy_returns_from_q_and_v(jnp.array([1.0, 2.0]), v, r, d, jnp.ones(2)).tolist()
        [1.36, 0.9, 2.0]
    """
    fn = "general_off_policy_returns_from_q_and_v"
    _checks.ranks(fn, q_t=(q_t, 1), v_t=(v_t, 1), r_t=(r_t, 1), discount_t=(discount_t, 1), c_t=(c_t, 1))
    _checks.kinds(fn, q_t=(q_t, "float"), v_t=(v_t, "float"), r_t=(r_t, "float"),
                  discount_t=(discount_t, "float"), c_t=(c_t, "float"))
    _checks.same_shape(fn, {"q_t": q_t, "v_t[:-1]": v_t[:-1], "r_t[:-1]": r_t[:-1], "discount_t[:-1]": discount_t[:-1], "c_t": c_t})
    g = r_t[-1] + discount_t[-1] * v_t[-1]

    def body(acc, xs):
        r, d, c, v, q = xs
        acc = r + d * (v - c * q + c * acc)
        return acc, acc

    _, returns = lax.scan(body, g, (r_t[:-1], discount_t[:-1], c_t, v_t[:-1], q_t), reverse=True)
    returns = jnp.concatenate([returns, g[None]], axis=0)
    return maybe_stop_gradient(stop_target_gradients, returns)
