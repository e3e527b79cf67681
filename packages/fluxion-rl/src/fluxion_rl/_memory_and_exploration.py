"""Exploration noise and episodic-memory (never-give-up style) intrinsic rewards."""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion_rl import _checks
from fluxion_rl._pytree import pytree_dataclass

Array = Any

__all__ = ["add_gaussian_noise", "add_ornstein_uhlenbeck_noise", "add_dirichlet_noise", "KNNQueryResult",
           "knn_query", "IntrinsicRewardState", "episodic_memory_intrinsic_rewards"]


def add_gaussian_noise(key: Array, action: Array, stddev: float) -> Array:
    """``action + stddev * N(0, 1)`` noise of the action's shape.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> a = rlax.add_gaussian_noise(fluxion.random.PRNGKey(0), jnp.zeros(2), 0.1)
        >>> a.shape, a.dtype
        ((2,), dtype('float32'))
    """
    _checks.kinds("add_gaussian_noise", action=(action, "float"))
    return action + jrandom.normal(key, shape=action.shape) * stddev


def add_ornstein_uhlenbeck_noise(key: Array, action: Array, noise_tm1: Array, damping: float,
                                 stddev: float) -> Array:
    """``action + noise_t`` with ``noise_t = (1 - damping) noise_tm1 + stddev * N(0, 1)``; rank-1 inputs.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> noise = rlax.add_ornstein_uhlenbeck_noise(fluxion.random.PRNGKey(0), jnp.zeros(2), jnp.ones(2), 0.15, 0.0)
        >>> noise.tolist()   # stddev 0: the previous noise, damped
        [0.85, 0.85]
    """
    fn = "add_ornstein_uhlenbeck_noise"
    _checks.ranks(fn, action=(action, 1), noise_tm1=(noise_tm1, 1))
    _checks.kinds(fn, action=(action, "float"), noise_tm1=(noise_tm1, "float"))
    noise_t = (1.0 - damping) * noise_tm1 + jrandom.normal(key, shape=action.shape) * stddev
    return action + noise_t


def add_dirichlet_noise(key: Array, prior: Array, dirichlet_alpha: float,
                        dirichlet_fraction: float) -> Array:
    """Mix a [B, A] prior with Dirichlet(``dirichlet_alpha``) noise (AlphaZero's root exploration).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> p = rlax.add_dirichlet_noise(fluxion.random.PRNGKey(0), jnp.full((1, 4), 0.25), 0.3, 0.25)
        >>> p.shape, round(float(p.sum()), 5)
        ((1, 4), 1.0)
    """
    fn = "add_dirichlet_noise"
    _checks.ranks(fn, prior=(prior, 2))
    _checks.kinds(fn, dirichlet_alpha=(dirichlet_alpha, "float"),
                  dirichlet_fraction=(dirichlet_fraction, "float"))
    batch_size, num_actions = prior.shape
    noise = jrandom.dirichlet(key, jnp.full((num_actions,), dirichlet_alpha), shape=(batch_size,))
    return (1 - dirichlet_fraction) * prior + dirichlet_fraction * noise


@pytree_dataclass
class KNNQueryResult:
    """The nearest neighbours found by ``knn_query``: points, their indices and negated distances."""

    neighbors: Array
    neighbor_indices: Array
    neighbor_neg_distances: Array


def _sqeuclidean(x: Array, y: Array) -> Array:
    return jnp.sum(jnp.square(x - y))


def _cdist(a: Array, b: Array, metric: Callable[[Array, Array], Array]) -> Array:
    return fluxion.vmap(fluxion.vmap(metric, (None, 0)), (0, None))(a, b)


def knn_query(data: Array, query_points: Array, num_neighbors: int,
              metric: Callable[[Array, Array], Array] = _sqeuclidean) -> KNNQueryResult:
    """The ``num_neighbors`` nearest rows of ``data`` [N, D] for each query [Q, D] (squared L2).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> memory = jnp.array([[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
        >>> out = rlax.knn_query(memory, jnp.array([[0.9, 0.1]]), 2)
        >>> out.neighbor_indices.tolist(), out.neighbor_neg_distances.round(4).tolist()
        ([[1, 0]], [[-0.02, -0.82]])
    """
    _checks.ranks("knn_query", data=(data, 2), query_points=(query_points, 2))
    if data.shape[-1] != query_points.shape[-1]:
        raise ValueError(f"knn_query: `data` and `query_points` must have the same feature size, got "
                         f"{data.shape[-1]} and {query_points.shape[-1]}")
    neg = -fluxion.jit(functools.partial(_cdist, metric=metric))(query_points, data)
    neg, indices = lax.top_k(neg, min(num_neighbors, data.shape[0]))
    neighbors = fluxion.vmap(lambda d, i: d[i], (None, 0))(jnp.asarray(data), indices)
    return KNNQueryResult(neighbors=neighbors, neighbor_indices=indices, neighbor_neg_distances=neg)


@pytree_dataclass
class IntrinsicRewardState:
    """Episodic memory and running distance statistics for ``episodic_memory_intrinsic_rewards``."""

    memory: Array
    next_memory_index: Any = 0
    distance_sum: Any = 0
    distance_count: Any = 0


def episodic_memory_intrinsic_rewards(
        embeddings: Array, num_neighbors: int, reward_scale: float,
        intrinsic_reward_state: IntrinsicRewardState | None = None, constant: float = 1e-3,
        epsilon: float = 1e-4, cluster_distance: float = 8e-3, max_similarity: float = 8.0,
        max_memory_size: int = 30_000) -> tuple[Array, IntrinsicRewardState]:
    """Episodic novelty rewards (Never Give Up) for a batch of embeddings [B, D], and the new state.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> emb = jnp.array([[0.0, 1.0], [1.0, 0.0]])
        >>> r, state = rlax.episodic_memory_intrinsic_rewards(emb, num_neighbors=2, reward_scale=1.0,
        ...                                                   max_memory_size=8)
        >>> r.round(4).tolist(), int(state.next_memory_index)
        ([65.8277, 65.8277], 2)
        >>> r, state = rlax.episodic_memory_intrinsic_rewards(emb + 0.1, 2, 1.0, state, max_memory_size=8)
        >>> r.round(4).tolist(), int(state.next_memory_index)  # near remembered embeddings: less novel
        ([10.7689, 10.7689], 4)
    """
    fn = "episodic_memory_intrinsic_rewards"
    if not intrinsic_reward_state:
        memory = jnp.inf * jnp.ones((max_memory_size, embeddings.shape[-1]))
        memory = memory.at[:num_neighbors, :].set(jnp.zeros((num_neighbors, embeddings.shape[-1])))
        intrinsic_reward_state = IntrinsicRewardState(memory=memory)
    elif tuple(intrinsic_reward_state.memory.shape) != (max_memory_size, embeddings.shape[-1]):
        raise ValueError(f"{fn}: `intrinsic_reward_state.memory` must have shape "
                         f"{(max_memory_size, embeddings.shape[-1])}, got "
                         f"{tuple(intrinsic_reward_state.memory.shape)}")
    knn = fluxion.jit(knn_query, static_argnums=[2])(intrinsic_reward_state.memory, embeddings, num_neighbors)
    memory = intrinsic_reward_state.memory
    start_index = intrinsic_reward_state.next_memory_index % memory.shape[0]
    indices = (jnp.arange(embeddings.shape[0]) + start_index) % memory.shape[0]
    memory = jnp.asarray(memory).at[indices].set(embeddings)
    nn_dist_sq = knn.neighbor_neg_distances
    distance_sum = intrinsic_reward_state.distance_sum + jnp.sum(nn_dist_sq)
    distance_count = intrinsic_reward_state.distance_count + nn_dist_sq.size
    mean_distance = distance_sum / distance_count
    rate = nn_dist_sq / (mean_distance + constant)
    rate = jnp.maximum(rate - cluster_distance, jnp.zeros_like(rate))
    kernel = epsilon / (rate + epsilon)
    similarity = jnp.sqrt(jnp.sum(kernel, axis=-1)) + constant
    reward = jnp.where(similarity > max_similarity, 0, jnp.ones_like(embeddings[..., 0]) / similarity)
    reward = reward * reward_scale
    # rlax advances the index by ``B % max_memory_size`` (precedence kept as in rlax).
    new_state = IntrinsicRewardState(memory=memory,
                                     next_memory_index=start_index + embeddings.shape[0] % max_memory_size,
                                     distance_sum=distance_sum, distance_count=distance_count)
    return reward, new_state
