"""Simple losses (L2, likelihood, log, expectile) and auxiliary-task rewards and losses."""

from __future__ import annotations

from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion_rl import _checks
from fluxion_rl._value_learning import q_lambda

Array = Any

__all__ = ["l2_loss", "likelihood", "log_loss", "expectile_loss", "pixel_control_rewards",
           "feature_control_rewards", "pixel_control_loss"]


def l2_loss(predictions: Array, targets: Array | None = None) -> Array:
    """Elementwise ``0.5 * (predictions - targets)^2`` (targets default to zero).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.l2_loss(jnp.array([1.0, 2.0])).tolist()
        [0.5, 2.0]
    """
    if targets is None:
        targets = jnp.zeros_like(predictions)
    _checks.kinds("l2_loss", predictions=(predictions, "float"), targets=(targets, "float"))
    return 0.5 * (predictions - targets) ** 2


def likelihood(predictions: Array, targets: Array) -> Array:
    """Bernoulli likelihood ``p^t (1 - p)^(1 - t)``, with ``0^0 = 1``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.likelihood(jnp.array([0.9]), jnp.array([1.0])).tolist()
        [0.9]
    """
    _checks.kinds("likelihood", predictions=(predictions, "float"), targets=(targets, "float"))
    values = predictions**targets * (1.0 - predictions) ** (1.0 - targets)
    exact = jnp.logical_or(jnp.logical_and(targets == 1, predictions == 1),
                           jnp.logical_and(targets == 0, predictions == 0))
    return jnp.where(exact, 1, values)


def log_loss(predictions: Array, targets: Array) -> Array:
    """Negative log-likelihood ``-log likelihood(predictions, targets)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.log_loss(jnp.array([0.5]), jnp.array([1.0])).tolist()
        [0.693147]
    """
    _checks.kinds("log_loss", predictions=(predictions, "float"), targets=(targets, "float"))
    return -jnp.log(likelihood(predictions, targets))


def expectile_loss(predictions: Array, targets: Array, expectile: float) -> Array:
    """Asymmetric squared loss: weight ``expectile`` on over-, ``1 - expectile`` on under-estimates.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.expectile_loss(jnp.array([1.0, 2.0]), jnp.array([2.0, 1.0]), 0.7).tolist()
        [0.7, 0.3]
    """
    _checks.same_shape("expectile_loss", {"predictions": predictions, "targets": targets})
    diff = targets - predictions
    weight = jnp.abs(expectile - jnp.less(diff, 0))
    return weight * diff**2


def pixel_control_rewards(observations: Array, cell_size: int) -> Array:
    """Mean absolute pixel change per ``cell_size`` x ``cell_size`` cell between frames.

    ``observations`` is [T+1, H, W, C]; returns [T, H // cell_size, W // cell_size].
    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> frames = jnp.arange(3 * 4 * 4 * 1, dtype=jnp.float32).reshape(3, 4, 4, 1) ** 2
        >>> rlax.pixel_control_rewards(frames, 2).shape
        (2, 2, 2)
        >>> rlax.pixel_control_rewards(frames, 2)[0].tolist()
        [[336.0, 400.0], [592.0, 656.0]]
    """
    _checks.ranks("pixel_control_rewards", observations=(observations, 4))
    _checks.kinds("pixel_control_rewards", observations=(observations, "float"))
    h = observations.shape[1] // cell_size
    w = observations.shape[2] // cell_size
    diff = jnp.abs(observations[1:] - observations[:-1])
    diff = diff.reshape((-1, h, cell_size, w, cell_size, observations.shape[3]))
    return diff.mean(axis=(2, 4, 5))


def feature_control_rewards(features: Array, cumulant_type: str = "absolute_change",
                            discount: Any = None) -> Array:
    """Pseudo-rewards from a [T+1, D] feature sequence: ``feature``, ``absolute_change``,
    ``increase``, ``decrease`` or ``potential`` (``discount * f_{t+1} - f_t``).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.feature_control_rewards(jnp.array([[1.0, 2.0], [3.0, 1.0], [2.0, 2.0]]), 'increase').tolist()
        [[2.0, -1.0], [-1.0, 1.0]]
    """
    _checks.ranks("feature_control_rewards", features=(features, 2))
    _checks.kinds("feature_control_rewards", features=(features, "float"))
    if cumulant_type == "feature":
        return features[1:]
    if cumulant_type == "absolute_change":
        return jnp.abs(features[1:] - features[:-1])
    if cumulant_type == "increase":
        return features[1:] - features[:-1]
    if cumulant_type == "decrease":
        return features[:-1] - features[1:]
    if cumulant_type == "potential":
        return discount * features[1:] - features[:-1]
    raise ValueError(f"feature_control_rewards: unknown cumulant_type {cumulant_type!r}; expected one of "
                     "'feature', 'absolute_change', 'increase', 'decrease', 'potential'")


def pixel_control_loss(observations: Array, actions: Array, action_values: Array,
                       discount_factor: Any, cell_size: int) -> Array:
    """Q(1) loss for the pixel-control auxiliary task, per cell: returns [T, H, W].

    Shapes: ``observations`` [T+1, ...], ``actions`` [T], ``action_values`` [T+1, H, W, N].

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> frames = jnp.arange(48.0).reshape(3, 4, 4, 1) / 10.0  # T = 2, 4x4 pixels
        >>> q_cells = jnp.zeros((3, 2, 2, 2))  # 2x2 cells of 2x2 pixels, 2 actions
        >>> loss = rlax.pixel_control_loss(frames, jnp.array([0, 1]), q_cells, 0.9, 2)
        >>> loss.shape, [round(float(v), 4) for v in loss[0].ravel()]
        ((2, 2, 2), [4.6208, 4.6208, 4.6208, 4.6208])
    """
    fn = "pixel_control_loss"
    _checks.ranks(fn, actions=(actions, 1), action_values=(action_values, 4))
    _checks.kinds(fn, observations=(observations, "float"), actions=(actions, "int"))
    seq_len = actions.shape[0]
    num_actions = action_values.shape[-1]
    hw_q = tuple(action_values.shape[1:-1])
    rewards = pixel_control_rewards(observations, cell_size)
    hw = tuple(rewards.shape[1:])
    if hw != hw_q:
        raise ValueError("Pixel Control values are not compatible with the shape of the"
                         "pseudo-rewards derived from the observation. Pseudo-rewards have "
                         f"shape {hw}, while Pixel Control values have shape {hw_q} ({fn}: "
                         f"`action_values` cells {hw_q} do not match the pseudo-reward cells "
                         f"{hw} derived from `observations`)")
    q_tm1 = jnp.reshape(action_values[:-1], (seq_len, -1, num_actions))
    r_t = jnp.reshape(rewards, (seq_len, -1))
    q_t = jnp.reshape(action_values[1:], (seq_len, -1, num_actions))
    a_tm1 = jnp.reshape(jnp.tile(actions[:, None, None], (1,) + hw), (seq_len, -1))
    discount_factor = jnp.asarray(discount_factor)
    if discount_factor.ndim == 0:
        pcont_t = jnp.tile(jnp.reshape(discount_factor, (1,)), a_tm1.shape)
    elif discount_factor.ndim == 1:
        pcont_t = jnp.reshape(jnp.tile(discount_factor[:, None, None], (1,) + hw), (seq_len, -1))
    else:
        raise ValueError("The discount_factor must be a scalar or a tensor of rank 1. "
                         f"instead is a tensor of shape {discount_factor.shape} ({fn}: "
                         f"`discount_factor` must be a scalar or rank 1)")
    batched = fluxion.vmap(lambda q0, a, r, d, q1: q_lambda(q0, a, r, d, q1, lambda_=1.0),
                           in_axes=1, out_axes=1)
    td_error = batched(q_tm1, a_tm1, r_t, pcont_t, q_t)
    return jnp.reshape(0.5 * td_error**2, (seq_len,) + hw)
