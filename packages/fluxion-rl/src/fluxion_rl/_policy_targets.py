"""Sampled policy distillation: policy targets and their loss (rlax's policy_targets)."""

from __future__ import annotations

import functools
from typing import Any

import fluxion.numpy as jnp
from fluxion_rl._base import maybe_stop_gradient as _stop
from fluxion_rl._pytree import pytree_dataclass

Array = Any

__all__ = ["PolicyTarget", "constant_policy_targets", "zero_policy_targets", "sampled_policy_distillation_loss"]


# --- policy distillation ----------------------------------------------------------------------------

@pytree_dataclass(frozen=True)
class PolicyTarget:
    """Sampled target actions and their weights for ``sampled_policy_distillation_loss``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_rl._policy_targets import PolicyTarget
        >>> target = PolicyTarget(actions=jnp.array([1, 2]), weights=jnp.ones(2))
        >>> target.actions.tolist(), target.weights.tolist()
        ([1, 2], [1.0, 1.0])
    """

    actions: Array
    weights: Array


def constant_policy_targets(distribution: Any, rng_key: Array, num_samples: int,
                            weights_scale: float = 1.0) -> PolicyTarget:
    """``num_samples`` actions drawn from ``distribution`` (``.sample(seed=, sample_shape=)``), equal weights.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_rl as rlax
        >>> class Categorical:  # the two methods the policy targets use, as distrax's
        ...     def __init__(self, probs):
        ...         self.probs, self.batch_shape = probs, probs.shape[:-1]
        ...     def sample(self, seed, sample_shape=()):
        ...         return fluxion.random.categorical(seed, jnp.log(self.probs),
        ...                                           shape=tuple(sample_shape) + self.batch_shape)
        ...     def log_prob(self, actions):
        ...         return jnp.log(self.probs)[actions]
        >>> teacher = Categorical(jnp.array([0.0, 1.0, 0.0]))
        >>> targets = rlax.constant_policy_targets(teacher, fluxion.random.key(0), 4)
        >>> targets.actions.tolist(), targets.weights.tolist()
        ([1, 1, 1, 1], [1.0, 1.0, 1.0, 1.0])
        >>> rlax.zero_policy_targets(teacher, fluxion.random.key(0), 2).weights.tolist()
        [0.0, 0.0]
    """
    actions = distribution.sample(seed=rng_key, sample_shape=(num_samples,))
    weights = weights_scale * jnp.ones((num_samples,) + tuple(distribution.batch_shape))
    return PolicyTarget(actions=actions, weights=weights)


zero_policy_targets = functools.partial(constant_policy_targets, weights_scale=0.0)


def sampled_policy_distillation_loss(distribution: Any, policy_targets: PolicyTarget,
                                     stop_target_gradients: bool = True) -> Any:
    """``-mean(weights * log_prob(actions))`` of the targets under ``distribution``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_rl as rlax
        >>> class Categorical:  # the two methods the policy targets use, as distrax's
        ...     def __init__(self, probs):
        ...         self.probs, self.batch_shape = probs, probs.shape[:-1]
        ...     def sample(self, seed, sample_shape=()):
        ...         return fluxion.random.categorical(seed, jnp.log(self.probs),
        ...                                           shape=tuple(sample_shape) + self.batch_shape)
        ...     def log_prob(self, actions):
        ...         return jnp.log(self.probs)[actions]
        >>> teacher = Categorical(jnp.array([0.0, 1.0, 0.0]))
        >>> targets = rlax.constant_policy_targets(teacher, fluxion.random.key(0), 4)
        >>> student = Categorical(jnp.array([0.25, 0.5, 0.25]))
        >>> float(rlax.sampled_policy_distillation_loss(student, targets))  # -log(0.5)
        0.6931471824645996
    """
    weights = _stop(stop_target_gradients, policy_targets.weights)
    actions = _stop(stop_target_gradients, policy_targets.actions)
    log_probs = distribution.log_prob(actions)
    if tuple(jnp.shape(weights)) != tuple(jnp.shape(log_probs)):
        raise ValueError(f"sampled_policy_distillation_loss: `policy_targets.weights` shape "
                         f"{tuple(jnp.shape(weights))} must equal the log-probs shape {tuple(jnp.shape(log_probs))}")
    min_logp = jnp.finfo(log_probs.dtype).min
    return -jnp.mean(weights * jnp.maximum(log_probs, min_logp))
