"""V-trace (IMPALA) and leaky V-trace off-policy corrections."""

from __future__ import annotations

import collections
from typing import Any

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion_rl import _checks

Array = Any

__all__ = ["vtrace", "leaky_vtrace", "vtrace_td_error_and_advantage",
           "leaky_vtrace_td_error_and_advantage", "VTraceOutput"]

VTraceOutput = collections.namedtuple("vtrace_output", ["errors", "pg_advantage", "q_estimate"])
VTraceOutput.__doc__ = "V-trace's ``errors``, policy-gradient advantages and Q estimates."


def _check(fn: str, v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, sample_mask) -> Array:
    if sample_mask is None:
        sample_mask = jnp.ones_like(rho_tm1, dtype=jnp.bool_)
    _checks.ranks(fn, v_tm1=(v_tm1, 1), v_t=(v_t, 1), r_t=(r_t, 1), discount_t=(discount_t, 1),
                  rho_tm1=(rho_tm1, 1), lambda_=(lambda_, {0, 1}), sample_mask=(sample_mask, 1))
    _checks.kinds(fn, v_tm1=(v_tm1, "float"), v_t=(v_t, "float"), r_t=(r_t, "float"),
                  discount_t=(discount_t, "float"), rho_tm1=(rho_tm1, "float"),
                  lambda_=(lambda_, "float"), sample_mask=(sample_mask, "bool"))
    _checks.same_shape(fn, {"v_tm1": v_tm1, "v_t": v_t, "r_t": r_t, "discount_t": discount_t,
                            "rho_tm1": rho_tm1, "sample_mask": sample_mask})
    return sample_mask


def _errors(v_tm1, td_errors, discount_t, sample_mask, c_tm1, stop_target_gradients) -> Array:
    def body(acc, xs):
        td, d, learnable, c = xs
        acc = learnable * (td + d * c * acc) + (1.0 - learnable) * acc
        return acc, acc

    _, errors = lax.scan(body, 0.0, (td_errors, discount_t, sample_mask, c_tm1), reverse=True)
    if isinstance(stop_target_gradients, bool):
        return lax.stop_gradient(errors + v_tm1) - v_tm1 if stop_target_gradients else errors
    return jnp.where(stop_target_gradients, lax.stop_gradient(errors + v_tm1) - v_tm1, errors)


def vtrace(v_tm1: Array, v_t: Array, r_t: Array, discount_t: Array, rho_tm1: Array,
           lambda_: Any = 1.0, clip_rho_threshold: float = 1.0, stop_target_gradients: bool = True,
           sample_mask: Array | None = None) -> Array:
    """V-trace errors ``v_s - v_tm1`` for a trajectory of length T (all inputs [T]).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rho = jnp.array([1.0, 0.5, 2.0])
        >>> rlax.vtrace(jnp.array([0.2, 0.5, 1.0]), v, r, d, rho).tolist()
        [1.835, 0.65, 1.0]
    """
    sample_mask = _check("vtrace", v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, sample_mask)
    c_tm1 = jnp.minimum(1.0, rho_tm1) * lambda_
    td_errors = jnp.minimum(clip_rho_threshold, rho_tm1) * (r_t + discount_t * v_t - v_tm1)
    return _errors(v_tm1, td_errors, discount_t, sample_mask, c_tm1, stop_target_gradients)


def leaky_vtrace(v_tm1: Array, v_t: Array, r_t: Array, discount_t: Array, rho_tm1: Array,
                 alpha_: float = 1.0, lambda_: Any = 1.0, clip_rho_threshold: float = 1.0,
                 stop_target_gradients: bool = True, sample_mask: Array | None = None) -> Array:
    """Leaky V-trace errors: clipped ratios mixed with unclipped ones by ``1 - alpha_``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rho = jnp.array([1.0, 0.5, 2.0])
        >>> rlax.leaky_vtrace(jnp.array([0.2, 0.5, 1.0]), v, r, d, rho, alpha_=0.9).tolist()
        [1.8755, 0.695, 1.1]
    """
    sample_mask = _check("leaky_vtrace", v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, sample_mask)
    c_tm1 = ((1 - alpha_) * rho_tm1 + alpha_ * jnp.minimum(1.0, rho_tm1)) * lambda_
    clipped = (1 - alpha_) * rho_tm1 + alpha_ * jnp.minimum(clip_rho_threshold, rho_tm1)
    td_errors = clipped * (r_t + discount_t * v_t - v_tm1)
    return _errors(v_tm1, td_errors, discount_t, sample_mask, c_tm1, stop_target_gradients)


def _q_and_advantage(errors, v_tm1, v_t, r_t, discount_t, lambda_, clipped_pg_rho_tm1) -> VTraceOutput:
    targets_tm1 = errors + v_tm1
    q_bootstrap = jnp.concatenate(
        [lambda_[:-1] * targets_tm1[1:] + (1 - lambda_[:-1]) * v_tm1[1:], v_t[-1:]], axis=0)
    q_estimate = r_t + discount_t * q_bootstrap
    return VTraceOutput(errors=errors, pg_advantage=clipped_pg_rho_tm1 * (q_estimate - v_tm1),
                        q_estimate=q_estimate)


def vtrace_td_error_and_advantage(v_tm1: Array, v_t: Array, r_t: Array, discount_t: Array,
                                  rho_tm1: Array, lambda_: Any = 1.0, clip_rho_threshold: float = 1.0,
                                  clip_pg_rho_threshold: float = 1.0, stop_target_gradients: bool = True,
                                  sample_mask: Array | None = None) -> VTraceOutput:
    """V-trace errors plus the policy-gradient advantages and Q estimates (IMPALA's actor loss).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rho = jnp.array([1.0, 0.5, 2.0])
        >>> out = rlax.vtrace_td_error_and_advantage(jnp.array([0.2, 0.5, 1.0]), v, r, d, rho)
        >>> out.pg_advantage.tolist()
        [1.835, 0.65, 1.0]
    """
    fn = "vtrace_td_error_and_advantage"
    sample_mask = _check(fn, v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, sample_mask)
    lambda_ = jnp.ones_like(discount_t) * lambda_
    errors = vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, clip_rho_threshold,
                    stop_target_gradients, sample_mask)
    return _q_and_advantage(errors, v_tm1, v_t, r_t, discount_t, lambda_,
                            jnp.minimum(clip_pg_rho_threshold, rho_tm1))


def leaky_vtrace_td_error_and_advantage(v_tm1: Array, v_t: Array, r_t: Array, discount_t: Array,
                                        rho_tm1: Array, alpha: float = 1.0, lambda_: Any = 1.0,
                                        clip_rho_threshold: float = 1.0,
                                        clip_pg_rho_threshold: float = 1.0,
                                        stop_target_gradients: bool = True,
                                        sample_mask: Array | None = None) -> VTraceOutput:
    """Leaky V-trace errors plus policy-gradient advantages and Q estimates.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rho = jnp.array([1.0, 0.5, 2.0])
        >>> out = rlax.leaky_vtrace_td_error_and_advantage(jnp.array([0.2, 0.5, 1.0]), v, r, d, rho, alpha=0.9)
        >>> out.errors.tolist()
        [1.8755, 0.695, 1.1]
    """
    fn = "leaky_vtrace_td_error_and_advantage"
    sample_mask = _check(fn, v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, sample_mask)
    lambda_ = jnp.ones_like(discount_t) * lambda_
    errors = leaky_vtrace(v_tm1, v_t, r_t, discount_t, rho_tm1, alpha, lambda_, clip_rho_threshold,
                          stop_target_gradients, sample_mask)
    clipped = (1 - alpha) * rho_tm1 + alpha * jnp.minimum(clip_pg_rho_threshold, rho_tm1)
    return _q_and_advantage(errors, v_tm1, v_t, r_t, discount_t, lambda_, clipped)
