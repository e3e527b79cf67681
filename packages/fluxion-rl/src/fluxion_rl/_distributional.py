"""Distributional value learning: categorical (C51) and quantile (QR-DQN) losses."""

from __future__ import annotations

from typing import Any

import fluxion
import fluxion.nn as fnn
import fluxion.numpy as jnp
from fluxion_rl import _checks
from fluxion_rl._base import maybe_stop_gradient as _stop
from fluxion_rl._clipping import huber_loss
from fluxion_rl._distributions import categorical_cross_entropy

Array = Any

__all__ = [
    "categorical_l2_project", "categorical_td_learning", "categorical_q_learning",
    "categorical_double_q_learning", "quantile_regression_loss", "quantile_q_learning",
    "quantile_expected_sarsa",
]

F, I = "float", "int"


def _check(fn: str, spec: dict[str, tuple[Any, Any, str]]) -> None:
    _checks.ranks(fn, **{k: (v, r) for k, (v, r, _) in spec.items()})
    _checks.kinds(fn, **{k: (v, t) for k, (v, _, t) in spec.items()})


def categorical_l2_project(z_p: Array, probs: Array, z_q: Array) -> Array:
    """Project the distribution ``(z_p, probs)`` onto the support ``z_q`` (Cramer / L2 projection).

    Shapes: ``z_p, probs`` [Kp]; ``z_q`` [Kq], increasing. Returns [Kq] probabilities.
    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> atoms = jnp.array([0.0, 1.0, 2.0])
        >>> rlax.categorical_l2_project(atoms + 0.5, jnp.array([0.2, 0.5, 0.3]), atoms).round(4).tolist()
        [0.1, 0.35, 0.55]
    """
    _check("categorical_l2_project", dict(z_p=(z_p, 1, F), probs=(probs, 1, F), z_q=(z_q, 1, F)))
    d_pos = jnp.roll(z_q, shift=-1)
    d_neg = jnp.roll(z_q, shift=1)
    z_p = jnp.clip(z_p, z_q[0], z_q[-1])[None, :]
    d_pos = (d_pos - z_q)[:, None]
    d_neg = (z_q - d_neg)[:, None]
    z_q = z_q[:, None]
    d_neg = jnp.where(d_neg > 0, 1.0 / d_neg, jnp.zeros_like(d_neg))
    d_pos = jnp.where(d_pos > 0, 1.0 / d_pos, jnp.zeros_like(d_pos))
    delta_qp = z_p - z_q
    d_sign = (delta_qp >= 0.0).astype(probs.dtype)
    delta_hat = d_sign * delta_qp * d_pos - (1.0 - d_sign) * delta_qp * d_neg
    return jnp.sum(jnp.clip(1.0 - delta_hat, 0.0, 1.0) * probs[None, :], axis=-1)


def categorical_td_learning(v_atoms_tm1: Array, v_logits_tm1: Array, r_t: Any, discount_t: Any,
                            v_atoms_t: Array, v_logits_t: Array, stop_target_gradients: bool = True) -> Any:
    """Categorical TD loss: cross-entropy to the projected distributional Bellman target.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> atoms = jnp.array([0.0, 1.0, 2.0])
        >>> loss = rlax.categorical_td_learning(atoms, jnp.zeros(3), 0.5, 0.9, atoms, jnp.zeros(3))
        >>> round(float(loss), 4)
        1.0986
    """
    _check("categorical_td_learning", dict(
        v_atoms_tm1=(v_atoms_tm1, 1, F), v_logits_tm1=(v_logits_tm1, 1, F), r_t=(r_t, 0, F),
        discount_t=(discount_t, 0, F), v_atoms_t=(v_atoms_t, 1, F), v_logits_t=(v_logits_t, 1, F)))
    target_z = r_t + discount_t * v_atoms_t
    target = categorical_l2_project(target_z, fnn.softmax(v_logits_t), v_atoms_tm1)
    return categorical_cross_entropy(labels=_stop(stop_target_gradients, target), logits=v_logits_tm1)


def categorical_q_learning(q_atoms_tm1: Array, q_logits_tm1: Array, a_tm1: Any, r_t: Any,
                           discount_t: Any, q_atoms_t: Array, q_logits_t: Array,
                           stop_target_gradients: bool = True) -> Any:
    """Categorical (C51) Q-learning loss; ``q_logits_*`` are [A, K], atoms [K].

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> atoms = jnp.array([0.0, 1.0, 2.0])
        >>> logits_tm1, logits_t = jnp.zeros((2, 3)), jnp.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
        >>> round(float(rlax.categorical_q_learning(atoms, logits_tm1, 0, 0.5, 0.9, atoms, logits_t)), 4)
        1.0986
    """
    _check("categorical_q_learning", dict(
        q_atoms_tm1=(q_atoms_tm1, 1, F), q_logits_tm1=(q_logits_tm1, 2, F), a_tm1=(a_tm1, 0, I),
        r_t=(r_t, 0, F), discount_t=(discount_t, 0, F), q_atoms_t=(q_atoms_t, 1, F),
        q_logits_t=(q_logits_t, 2, F)))
    target_z = r_t + discount_t * q_atoms_t
    q_t_probs = fnn.softmax(q_logits_t)
    q_t_mean = jnp.sum(q_t_probs * q_atoms_t[None, :], axis=1)
    p_target_z = q_t_probs[jnp.argmax(q_t_mean)]
    target = categorical_l2_project(target_z, p_target_z, q_atoms_tm1)
    return categorical_cross_entropy(labels=_stop(stop_target_gradients, target),
                                     logits=q_logits_tm1[a_tm1])


def categorical_double_q_learning(q_atoms_tm1: Array, q_logits_tm1: Array, a_tm1: Any, r_t: Any,
                                  discount_t: Any, q_atoms_t: Array, q_logits_t: Array,
                                  q_t_selector: Array, stop_target_gradients: bool = True) -> Any:
    """Categorical double Q-learning loss: the bootstrap action is ``argmax(q_t_selector)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> atoms = jnp.array([0.0, 1.0, 2.0])
        >>> logits_tm1, logits_t = jnp.zeros((2, 3)), jnp.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
        >>> round(float(rlax.categorical_double_q_learning(atoms, logits_tm1, 0, 0.5, 0.9, atoms, logits_t, jnp.array([0.0, 1.0]))), 4)
        1.0986
    """
    _check("categorical_double_q_learning", dict(
        q_atoms_tm1=(q_atoms_tm1, 1, F), q_logits_tm1=(q_logits_tm1, 2, F), a_tm1=(a_tm1, 0, I),
        r_t=(r_t, 0, F), discount_t=(discount_t, 0, F), q_atoms_t=(q_atoms_t, 1, F),
        q_logits_t=(q_logits_t, 2, F), q_t_selector=(q_t_selector, 1, F)))
    target_z = r_t + discount_t * q_atoms_t
    p_target_z = fnn.softmax(q_logits_t[jnp.argmax(q_t_selector)])
    target = categorical_l2_project(target_z, p_target_z, q_atoms_tm1)
    return categorical_cross_entropy(labels=_stop(stop_target_gradients, target),
                                     logits=q_logits_tm1[a_tm1])


def quantile_regression_loss(dist_src: Array, tau_src: Array, dist_target: Array,
                             huber_param: float = 0.0, stop_target_gradients: bool = True) -> Any:
    """Quantile regression loss of quantiles ``dist_src`` at levels ``tau_src`` vs target samples.

    With ``huber_param > 0`` this is the quantile Huber loss.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> taus = jnp.array([0.25, 0.75])
        >>> round(float(rlax.quantile_regression_loss(jnp.array([0.0, 1.0]), taus, jnp.array([0.5, 2.0]))), 4)
        0.75
        >>> round(float(rlax.quantile_regression_loss(jnp.array([0.0, 1.0]), taus, jnp.array([0.5, 2.0]), huber_param=1.0)), 4)
        0.4062
    """
    _check("quantile_regression_loss", dict(dist_src=(dist_src, 1, F), tau_src=(tau_src, 1, F),
                                            dist_target=(dist_target, 1, F)))
    delta = dist_target[None, :] - dist_src[:, None]
    delta_neg = _stop(stop_target_gradients, (delta < 0.0).astype(jnp.float32))
    weight = jnp.abs(tau_src[:, None] - delta_neg)
    loss = huber_loss(delta, huber_param) if huber_param > 0.0 else jnp.abs(delta)
    return jnp.sum(jnp.mean(loss * weight, axis=-1))


def quantile_q_learning(dist_q_tm1: Array, tau_q_tm1: Array, a_tm1: Any, r_t: Any, discount_t: Any,
                        dist_q_t_selector: Array, dist_q_t: Array, huber_param: float = 0.0,
                        stop_target_gradients: bool = True) -> Any:
    """QR-DQN loss; ``dist_q_*`` are [N, A] quantiles, the greedy action from the selector's means.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> taus = jnp.array([0.25, 0.75])
        >>> q_tm1, q_t = jnp.array([[0.0, 1.0], [1.0, 2.0]]), jnp.array([[1.0, 3.0], [0.0, 0.5]])
        >>> round(float(rlax.quantile_q_learning(q_tm1, taus, 0, 1.0, 0.9, q_t, q_t)), 4)
        1.825
    """
    _check("quantile_q_learning", dict(
        dist_q_tm1=(dist_q_tm1, 2, F), tau_q_tm1=(tau_q_tm1, 1, F), a_tm1=(a_tm1, 0, I),
        r_t=(r_t, 0, F), discount_t=(discount_t, 0, F), dist_q_t_selector=(dist_q_t_selector, 2, F),
        dist_q_t=(dist_q_t, 2, F)))
    dist_qa_tm1 = dist_q_tm1[:, a_tm1]
    a_t = jnp.argmax(jnp.mean(dist_q_t_selector, axis=0))
    dist_target = _stop(stop_target_gradients, r_t + discount_t * dist_q_t[:, a_t])
    return quantile_regression_loss(dist_qa_tm1, tau_q_tm1, dist_target, huber_param)


def quantile_expected_sarsa(dist_q_tm1: Array, tau_q_tm1: Array, a_tm1: Any, r_t: Any,
                            discount_t: Any, dist_q_t: Array, probs_a_t: Array,
                            huber_param: float = 0.0, stop_target_gradients: bool = True) -> Any:
    """Quantile expected-SARSA loss: per-action quantile losses weighted by ``probs_a_t``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> taus = jnp.array([0.25, 0.75])
        >>> q_tm1, q_t = jnp.array([[0.0, 1.0], [1.0, 2.0]]), jnp.array([[1.0, 3.0], [0.0, 0.5]])
        >>> round(float(rlax.quantile_expected_sarsa(q_tm1, taus, 0, 1.0, 0.9, q_t, jnp.array([0.5, 0.5]))), 4)
        1.2625
    """
    _check("quantile_expected_sarsa", dict(
        dist_q_tm1=(dist_q_tm1, 2, F), tau_q_tm1=(tau_q_tm1, 1, F), a_tm1=(a_tm1, 0, I),
        r_t=(r_t, 0, F), discount_t=(discount_t, 0, F), dist_q_t=(dist_q_t, 2, F),
        probs_a_t=(probs_a_t, 1, F)))
    dist_qa_tm1 = dist_q_tm1[:, a_tm1]
    dist_target = _stop(stop_target_gradients, r_t + discount_t * dist_q_t)
    probs_a_t = _stop(stop_target_gradients, probs_a_t)
    per_action = fluxion.vmap(
        lambda target: quantile_regression_loss(dist_qa_tm1, tau_q_tm1, target, huber_param),
        in_axes=1)
    return jnp.dot(per_action(dist_target), probs_a_t)
