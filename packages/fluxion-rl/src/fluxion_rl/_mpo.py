"""MPO and V-MPO losses with Lagrange-multiplier (dual) constraints."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import fluxion.lax as lax
import fluxion.nn as fnn
import fluxion.numpy as jnp
from fluxion_rl import _checks
from fluxion_rl._base import AllSum
from fluxion_rl._base import maybe_stop_gradient as _stop

Array = Any

__all__ = ["LagrangePenalty", "MpoOutputs", "mpo_loss", "mpo_compute_weights_and_temperature_loss",
           "compute_parametric_kl_penalty_and_dual_loss", "vmpo_loss",
           "vmpo_compute_weights_and_temperature_loss"]

_EPSILON = 1e-10
_INFINITY = 1e6


class LagrangePenalty(NamedTuple):
    """A constraint ``value <= epsilon`` enforced by the Lagrange multiplier ``alpha``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> penalty = rlax.LagrangePenalty(alpha=jnp.array(1.0), epsilon=0.1)
        >>> float(penalty.alpha), penalty.epsilon, penalty.per_dimension
        (1.0, 0.1, False)
    """

    alpha: Array
    epsilon: Any
    per_dimension: bool = False


class MpoOutputs(NamedTuple):
    """The parts of an (V-)MPO loss, for logging."""

    temperature_loss: Any
    policy_loss: Array
    kl_loss: Array
    alpha_loss: Array
    normalized_weights: Array
    num_samples: Any


def _default_projection(x: Array) -> Array:
    return jnp.clip(x, min=_EPSILON)


def _check_penalty(fn: str, name: str, penalty: LagrangePenalty, kl: Array | None = None) -> None:
    _checks.ranks(fn, **{f"{name}.epsilon": (penalty.epsilon, 0)})
    _checks.kinds(fn, **{f"{name}.alpha": (penalty.alpha, "float"),
                         f"{name}.epsilon": (penalty.epsilon, "float")})
    if kl is not None:
        _checks.kinds(fn, kl=(kl, "float"))


def _sample_axis(fn: str, sample_axis: int, ndim: int) -> int:
    if sample_axis < 0:
        sample_axis += ndim
    if not 0 <= sample_axis < ndim:
        raise ValueError(f"{fn}: `sample_axis` {sample_axis} not in array rank {ndim}")
    return sample_axis


def mpo_loss(sample_log_probs: Array, sample_q_values: Array, temperature_constraint: LagrangePenalty,
             kl_constraints: Sequence[tuple[Array, LagrangePenalty]],
             projection_operator: Callable[[Array], Array] = _default_projection,
             policy_loss_weight: float = 1.0, temperature_loss_weight: float = 1.0,
             kl_loss_weight: float = 1.0, alpha_loss_weight: float = 1.0, sample_axis: int = 0,
             use_stop_gradient: bool = True) -> tuple[Array, MpoOutputs]:
    """The MPO loss: weighted log-likelihood of sampled actions plus temperature and KL duals.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> logp = jnp.log(jnp.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]]))  # 3 sampled actions x 2 states
        >>> q = jnp.array([[1.0, 2.0], [3.0, 0.0], [2.0, 2.0]])
        >>> kl = jnp.array([0.05, 0.2])
        >>> loss, out = rlax.mpo_loss(logp, q, rlax.LagrangePenalty(jnp.array(1.0), 0.1),
        ...                           [(kl, rlax.LagrangePenalty(jnp.array(1.0), 0.01))])
        >>> loss.round(4).tolist(), out.policy_loss.round(4).tolist()
        ([3.5345, 2.6697], [1.1155, 0.8997])
    """
    fn = "mpo_loss"
    _checks.same_shape(fn, {"sample_log_probs": sample_log_probs, "sample_q_values": sample_q_values})
    _check_penalty(fn, "temperature_constraint", temperature_constraint)
    _checks.kinds(fn, sample_log_probs=(sample_log_probs, "float"), sample_q_values=(sample_q_values, "float"))
    for kl, penalty in kl_constraints:
        _check_penalty(fn, "kl_constraints", penalty, kl)
        want = sample_q_values.ndim if penalty.per_dimension else sample_q_values.ndim - 1
        _checks.ranks(fn, kl=(kl, want))
    sample_axis = _sample_axis(fn, sample_axis, sample_q_values.ndim)
    temperature_loss, norm_weights, num_samples = mpo_compute_weights_and_temperature_loss(
        sample_q_values, temperature_constraint, projection_operator, sample_axis=sample_axis)
    norm_weights = _stop(use_stop_gradient, norm_weights)
    policy_loss = -jnp.sum(norm_weights * sample_log_probs, axis=sample_axis)
    kl_loss, alpha_loss = compute_parametric_kl_penalty_and_dual_loss(
        kl_constraints, projection_operator, use_stop_gradient)
    loss = (policy_loss_weight * policy_loss + temperature_loss_weight * temperature_loss
            + kl_loss_weight * kl_loss + alpha_loss_weight * alpha_loss)
    return loss, MpoOutputs(temperature_loss=temperature_loss, policy_loss=policy_loss, kl_loss=kl_loss,
                            alpha_loss=alpha_loss, normalized_weights=norm_weights,
                            num_samples=num_samples)


def mpo_compute_weights_and_temperature_loss(
        sample_q_values: Array, temperature_constraint: LagrangePenalty,
        projection_operator: Callable[[Array], Array], sample_axis: int = 0) -> tuple[Array, Array, Any]:
    """MPO's E-step: softmax weights of ``Q / temperature`` over samples, and the temperature loss.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_rl as rlax
        >>> penalty = rlax.LagrangePenalty(alpha=jnp.array(1.0), epsilon=0.1)
        >>> q = jnp.array([[1.0, 2.0], [3.0, 0.0], [2.0, 2.0]])  # 3 samples x 2 states
        >>> t_loss, weights, n = rlax.mpo_compute_weights_and_temperature_loss(
        ...     q, penalty, fluxion.nn.softplus)
        >>> [round(float(v), 5) for v in t_loss], n
        ([2.37382, 1.73476], 3)
        >>> [[round(float(v), 5) for v in row] for row in weights]
        [[0.12942, 0.45084], [0.59345, 0.09832], [0.27713, 0.45084]]
    """
    fn = "mpo_compute_weights_and_temperature_loss"
    _check_penalty(fn, "temperature_constraint", temperature_constraint)
    _checks.kinds(fn, sample_q_values=(sample_q_values, "float"))
    sample_axis = _sample_axis(fn, sample_axis, sample_q_values.ndim)
    n = sample_q_values.shape[sample_axis]
    temperature = projection_operator(temperature_constraint.alpha)
    scaled = sample_q_values / temperature
    q_logsumexp = fnn.logsumexp(scaled, axis=sample_axis, keepdims=True)
    temperature_loss = temperature * temperature_constraint.epsilon + temperature * (
        jnp.squeeze(q_logsumexp, axis=sample_axis) - jnp.log(n))
    weights = jnp.exp(scaled - q_logsumexp)
    return temperature_loss, weights / jnp.sum(weights, axis=sample_axis, keepdims=True), n


def _kl_constraint_loss(kl: Array, penalty: LagrangePenalty, projection_operator: Callable,
                        use_stop_gradient: bool = True) -> tuple[Array, Array, Array]:
    alpha = projection_operator(penalty.alpha)
    alpha_constant = _stop(use_stop_gradient, alpha)
    alpha_loss = alpha * (penalty.epsilon - _stop(use_stop_gradient, kl))
    kl_loss = alpha_constant * kl
    if penalty.per_dimension:
        kl_loss = jnp.sum(kl_loss, axis=-1)
        alpha_loss = jnp.sum(alpha_loss, axis=-1)
    return kl_loss, alpha_loss, alpha


def compute_parametric_kl_penalty_and_dual_loss(
        kl_constraints: Sequence[tuple[Array, LagrangePenalty]],
        projection_operator: Callable[[Array], Array],
        use_stop_gradient: bool = True) -> tuple[Array, Array]:
    """Sum over constraints of the KL penalty ``alpha * kl`` and the dual loss ``alpha (eps - kl)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_rl as rlax
        >>> penalty = rlax.LagrangePenalty(alpha=jnp.array(1.0), epsilon=0.1)
        >>> kl = jnp.array([0.05, 0.3])
        >>> kl_loss, alpha_loss = rlax.compute_parametric_kl_penalty_and_dual_loss(
        ...     [(kl, penalty)], fluxion.nn.softplus)
        >>> [round(float(v), 5) for v in kl_loss], [round(float(v), 5) for v in alpha_loss]
        ([0.06566, 0.39398], [0.06566, -0.26265])
    """
    kl_losses, alpha_losses = [], []
    for kl, penalty in kl_constraints:
        _check_penalty("compute_parametric_kl_penalty_and_dual_loss", "kl_constraints", penalty, kl)
        kl_loss, alpha_loss, _ = _kl_constraint_loss(kl, penalty, projection_operator, use_stop_gradient)
        kl_losses.append(kl_loss)
        alpha_losses.append(alpha_loss)
    return sum(kl_losses), sum(alpha_losses)


def vmpo_loss(sample_log_probs: Array, advantages: Array, temperature_constraint: LagrangePenalty,
              kl_constraints: Sequence[tuple[Array, LagrangePenalty]],
              projection_operator: Callable[[Array], Array] = _default_projection,
              restarting_weights: Array | None = None, importance_weights: Array | None = None,
              top_k_fraction: float = 0.5, policy_loss_weight: float = 1.0,
              temperature_loss_weight: float = 1.0, kl_loss_weight: float = 1.0,
              alpha_loss_weight: float = 1.0, axis_name: str | None = None,
              use_stop_gradient: bool = True) -> tuple[Array, MpoOutputs]:
    """The V-MPO loss over the top ``top_k_fraction`` of advantages, with temperature and KL duals.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> logp = jnp.log(jnp.array([0.2, 0.5, 0.3, 0.1]))
        >>> adv = jnp.array([1.0, -0.5, 2.0, 0.0])
        >>> kl = jnp.array([0.05, 0.2, 0.1, 0.0])
        >>> loss, out = rlax.vmpo_loss(logp, adv, rlax.LagrangePenalty(jnp.array(1.0), 0.1),
        ...                            [(kl, rlax.LagrangePenalty(jnp.array(1.0), 0.01))])
        >>> loss.round(4).tolist(), out.normalized_weights.round(4).tolist()  # top half of advantages
        ([3.4615, 1.7301, 5.2508, 1.7301], [0.2689, 0.0, 0.7311, 0.0])
    """
    fn = "vmpo_loss"
    if restarting_weights is None:
        restarting_weights = jnp.ones_like(sample_log_probs)
    if importance_weights is None:
        importance_weights = jnp.ones_like(sample_log_probs)
    _checks.same_shape(fn, {"advantages": advantages, "sample_log_probs": sample_log_probs,
                            "restarting_weights": restarting_weights,
                            "importance_weights": importance_weights})
    _check_penalty(fn, "temperature_constraint", temperature_constraint)
    for kl, penalty in kl_constraints:
        _check_penalty(fn, "kl_constraints", penalty, kl)
        if penalty.per_dimension:
            _checks.ranks(fn, kl=(kl, advantages.ndim + 1))
            _checks.same_shape(fn, {"kl[..., 0]": kl[..., 0], "advantages": advantages})
        else:
            _checks.same_shape(fn, {"kl": kl, "advantages": advantages})
    temperature_loss, norm_weights, num_samples = vmpo_compute_weights_and_temperature_loss(
        advantages, restarting_weights, importance_weights, temperature_constraint, projection_operator,
        top_k_fraction, axis_name=axis_name, use_stop_gradient=use_stop_gradient)
    if axis_name:
        num_examples = lax.all_gather(sample_log_probs, axis_name=axis_name).size
    else:
        num_examples = sample_log_probs.size
    policy_loss = -sample_log_probs * norm_weights * num_examples
    kl_loss, alpha_loss = compute_parametric_kl_penalty_and_dual_loss(
        kl_constraints, projection_operator, use_stop_gradient)
    loss = (policy_loss_weight * policy_loss + temperature_loss_weight * temperature_loss
            + kl_loss_weight * kl_loss + alpha_loss_weight * alpha_loss)
    return loss, MpoOutputs(temperature_loss=temperature_loss, policy_loss=policy_loss, kl_loss=kl_loss,
                            alpha_loss=alpha_loss, normalized_weights=norm_weights,
                            num_samples=num_samples)


def _top_k_weights(top_k_fraction: float, restarting_weights: Array, scaled_advantages: Array,
                   axis_name: str | None, use_stop_gradient: bool) -> Array:
    if not 0.0 < top_k_fraction <= 1.0:
        raise ValueError(f"vmpo_loss: `top_k_fraction` must be in (0, 1], got {top_k_fraction}")
    if top_k_fraction >= 1.0:
        return restarting_weights
    valid = scaled_advantages - (1.0 - restarting_weights) * _INFINITY
    everything = lax.all_gather(valid, axis_name=axis_name) if axis_name else valid
    top_k = int(top_k_fraction * everything.size)
    if top_k == 0:
        raise ValueError("vmpo_loss: `top_k_fraction` too low to keep any advantage")
    top_k_min = jnp.sort(jnp.reshape(everything, [-1]))[-top_k]
    weights = _stop(use_stop_gradient, jnp.greater_equal(valid, top_k_min).astype(jnp.float32))
    return restarting_weights * weights


def vmpo_compute_weights_and_temperature_loss(
        advantages: Array, restarting_weights: Array, importance_weights: Array,
        temperature_constraint: LagrangePenalty, projection_operator: Callable[[Array], Array],
        top_k_fraction: float, axis_name: str | None = None,
        use_stop_gradient: bool = True) -> tuple[Array, Array, Array]:
    """V-MPO's E-step: normalised weights of the top-k advantages and the temperature loss.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_rl as rlax
        >>> penalty = rlax.LagrangePenalty(alpha=jnp.array(1.0), epsilon=0.1)
        >>> advantages = jnp.array([1.0, -1.0, 2.0, 0.5])
        >>> t_loss, weights, threshold = rlax.vmpo_compute_weights_and_temperature_loss(
        ...     advantages, jnp.ones(4), jnp.ones(4), penalty, fluxion.nn.softplus, 0.5)
        >>> round(float(t_loss), 5), [round(float(v), 5) for v in weights]
        (1.72429, [0.31833, 0.0, 0.68167, 0.0])
    """
    fn = "vmpo_compute_weights_and_temperature_loss"
    _checks.same_shape(fn, {"advantages": advantages, "restarting_weights": restarting_weights,
                            "importance_weights": importance_weights})
    _check_penalty(fn, "temperature_constraint", temperature_constraint)
    importance_weights = _stop(use_stop_gradient, importance_weights)
    temperature = projection_operator(temperature_constraint.alpha)
    scaled = restarting_weights * advantages / temperature
    max_scaled = jnp.max(scaled)
    if axis_name:
        max_scaled = lax.pmax(lax.stop_gradient(max_scaled), axis_name=axis_name)
    else:
        max_scaled = _stop(use_stop_gradient, max_scaled)
    top_k_restarting = _top_k_weights(top_k_fraction, restarting_weights, scaled, axis_name,
                                      use_stop_gradient)
    all_sum = AllSum(axis_name)
    unnormalized = top_k_restarting * importance_weights * jnp.exp(scaled - max_scaled)
    sum_weights = all_sum(unnormalized) + _EPSILON
    num_samples = all_sum(top_k_restarting) + _EPSILON
    normalized = _stop(use_stop_gradient, unnormalized / sum_weights)
    log_mean_weights = jnp.log(sum_weights) + max_scaled - jnp.log(num_samples)
    temperature_loss = temperature * (temperature_constraint.epsilon + log_mean_weights)
    return temperature_loss, normalized, num_samples


