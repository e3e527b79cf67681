"""Policy-gradient losses: REINFORCE-style, entropy, PPO's clipped surrogate, DPG, QPG, RM, RPG."""

from __future__ import annotations

from typing import Any

import fluxion.nn as fnn
import fluxion.numpy as jnp
from fluxion_rl import _checks
from fluxion_rl._base import maybe_stop_gradient as _stop
from fluxion_rl._distributions import softmax

Array = Any

__all__ = ["dpg_loss", "policy_gradient_loss", "entropy_loss", "qpg_loss", "rm_loss", "rpg_loss",
           "clipped_surrogate_pg_loss"]

F, I = "float", "int"


def _check(fn: str, spec: dict[str, tuple[Any, Any, str]]) -> None:
    _checks.ranks(fn, **{k: (v, r) for k, (v, r, _) in spec.items()})
    _checks.kinds(fn, **{k: (v, t) for k, (v, _, t) in spec.items()})


def _clip_by_l2_norm(x: Array, max_norm: float) -> Array:
    sum_sq = jnp.sum(jnp.vdot(x, x))
    nonzero = sum_sq > 0
    norm = jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, sum_sq, jnp.ones_like(sum_sq))), sum_sq)
    return x * max_norm / jnp.maximum(norm, max_norm)


def dpg_loss(a_t: Array, dqda_t: Array, dqda_clipping: float | None = None,
             use_stop_gradient: bool = True) -> Array:
    """Deterministic policy-gradient loss ``0.5 * ||stop(dqda_t + a_t) - a_t||^2`` per dimension.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.dpg_loss(jnp.array([0.5, -1.0]), jnp.array([2.0, 1.0])).tolist()
        [2.0, 0.5]
    """
    _check("dpg_loss", dict(a_t=(a_t, 1, F), dqda_t=(dqda_t, 1, F)))
    if dqda_clipping is not None:
        dqda_t = _clip_by_l2_norm(dqda_t, dqda_clipping)
    target = _stop(use_stop_gradient, dqda_t + a_t)
    return 0.5 * (target - a_t) ** 2


def policy_gradient_loss(logits_t: Array, a_t: Array, adv_t: Array, w_t: Array,
                         use_stop_gradient: bool = True) -> Array:
    """Mean over time of ``-log softmax(logits_t)[a_t] * adv_t * w_t``.

    Shapes: ``logits_t`` [T, A]; ``a_t, adv_t, w_t`` [T].

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> logits = jnp.array([[1.0, 0.0], [0.0, 2.0]])
        >>> a, adv = jnp.array([0, 1]), jnp.array([1.0, -0.5])
        >>> float(rlax.policy_gradient_loss(logits, a, adv, jnp.ones(2)))
        0.124899
    """
    _check("policy_gradient_loss", dict(logits_t=(logits_t, 2, F), a_t=(a_t, 1, I), adv_t=(adv_t, 1, F),
                                        w_t=(w_t, 1, F)))
    log_pi_a_t = softmax().logprob(a_t, logits_t)
    adv_t = _stop(use_stop_gradient, adv_t)
    return jnp.mean(-log_pi_a_t * adv_t * w_t)


def entropy_loss(logits_t: Array, w_t: Array) -> Array:
    """Negative weighted mean entropy of ``softmax(logits_t)`` ([T, A]; weights [T]).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> float(rlax.entropy_loss(jnp.array([[1.0, 0.0], [0.0, 0.0]]), jnp.ones(2)))
        -0.637675
    """
    _check("entropy_loss", dict(logits_t=(logits_t, 2, F), w_t=(w_t, 1, F)))
    return -jnp.mean(softmax().entropy(logits_t) * w_t)


def _compute_advantages(logits_t: Array, q_t: Array, use_stop_gradient: bool = True) -> tuple[Array, Array]:
    policy_t = fnn.softmax(logits_t, axis=1)
    q_t = _stop(use_stop_gradient, q_t)
    baseline_t = jnp.sum(policy_t * q_t, axis=1)
    return policy_t, q_t - baseline_t[:, None]


def qpg_loss(logits_t: Array, q_t: Array, use_stop_gradient: bool = True) -> Array:
    """Q-based policy-gradient loss (all-actions advantage actor-critic); ``[T, A]`` inputs.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> logits, q = jnp.array([[1.0, 0.0], [0.0, 2.0]]), jnp.array([[1.0, 0.0], [0.0, 3.0]])
        >>> fluxion.grad(rlax.qpg_loss)(logits, q).tolist()
        [[-0.098306, 0.098306], [0.15749, -0.15749]]
    """
    _check("qpg_loss", dict(logits_t=(logits_t, 2, F), q_t=(q_t, 2, F)))
    policy_t, advantage_t = _compute_advantages(logits_t, q_t)
    advantage_t = _stop(use_stop_gradient, advantage_t)
    return jnp.mean(jnp.sum(-policy_t * advantage_t, axis=1), axis=0)


def rm_loss(logits_t: Array, q_t: Array, use_stop_gradient: bool = True) -> Array:
    """Regret-matching policy-gradient loss; ``[T, A]`` inputs.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.rm_loss(jnp.array([[1.0, 0.0], [0.0, 2.0]]), jnp.array([[1.0, 0.5], [0.0, 1.0]])).tolist()
        -0.10165
    """
    _check("rm_loss", dict(logits_t=(logits_t, 2, F), q_t=(q_t, 2, F)))
    policy_t, advantage_t = _compute_advantages(logits_t, q_t)
    regret_t = _stop(use_stop_gradient, fnn.relu(advantage_t))
    return jnp.mean(jnp.sum(-policy_t * regret_t, axis=1), axis=0)


def rpg_loss(logits_t: Array, q_t: Array, use_stop_gradient: bool = True) -> Array:
    """Regret policy-gradient loss: mean total positive advantage; ``[T, A]`` inputs.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.rpg_loss(jnp.array([[1.0, 0.0], [0.0, 2.0]]), jnp.array([[1.0, 0.5], [0.0, 1.0]])).tolist()
        0.126837
    """
    _check("rpg_loss", dict(logits_t=(logits_t, 2, F), q_t=(q_t, 2, F)))
    _, adv_t = _compute_advantages(logits_t, q_t, use_stop_gradient)
    return jnp.mean(jnp.sum(fnn.relu(adv_t), axis=1), axis=0)


def clipped_surrogate_pg_loss(prob_ratios_t: Array, adv_t: Array, epsilon: float,
                              use_stop_gradient: bool = True) -> Array:
    """PPO's clipped surrogate loss ``-mean(min(r A, clip(r, 1 - eps, 1 + eps) A))``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> float(rlax.clipped_surrogate_pg_loss(jnp.array([0.5, 1.5]), jnp.array([1.0, 2.0]), 0.2))
        -1.45
    """
    _check("clipped_surrogate_pg_loss", dict(prob_ratios_t=(prob_ratios_t, 1, F), adv_t=(adv_t, 1, F)))
    adv_t = _stop(use_stop_gradient, adv_t)
    clipped = jnp.clip(prob_ratios_t, 1.0 - epsilon, 1.0 + epsilon)
    return -jnp.mean(jnp.fmin(prob_ratios_t * adv_t, clipped * adv_t))
