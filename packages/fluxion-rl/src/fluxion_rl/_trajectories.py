"""Trajectory utilities: observation-action-reward embedding, interruptions, sub-sequences."""

from __future__ import annotations

from typing import Any

import fluxion
import fluxion.nn as fnn
import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion_rl import _checks

Array = Any

__all__ = ["embed_oar", "fix_step_type_on_interruptions", "extract_subsequences", "sample_start_indices"]



# dm_env.StepType values.
_FIRST, _MID, _LAST = 0, 1, 2


def embed_oar(features: Array, action: Array, reward: Array, num_actions: int) -> Array:
    """Concatenate features [T, D], one-hot actions [T] and ``tanh(reward)`` [T] along the last axis.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.embed_oar(jnp.ones((5, 3)), jnp.zeros(5, jnp.int32), jnp.ones(5), num_actions=4).shape
        (5, 8)
    """
    _checks.ranks("embed_oar", features=(features, 2), action=(action, 1), reward=(reward, 1))
    action = fnn.one_hot(action, num_classes=num_actions)
    reward = jnp.tanh(reward)
    while reward.ndim < action.ndim:
        reward = reward[..., None]
    return jnp.concatenate([features, action, reward], axis=-1)


def fix_step_type_on_interruptions(step_type: Array) -> Array:
    """Mark as LAST (2) each MID (1) step that is directly followed by a FIRST (0) step; [T, B].

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.fix_step_type_on_interruptions(jnp.array([[0], [1], [0]])).tolist()
        [[0], [2], [0]]
    """
    _checks.ranks("fix_step_type_on_interruptions", step_type=(step_type, 2))
    step_type = jnp.asarray(step_type)
    following = jnp.concatenate(
        [step_type[1:], jnp.full(step_type[:1].shape, _MID, dtype=step_type.dtype)], axis=0)
    interrupted = jnp.logical_and(following == _FIRST, step_type == _MID)
    return jnp.where(interrupted, _LAST, step_type)


def extract_subsequences(trajectories: Array, start_indices: Array, subsequence_len: int = 1,
                         max_valid_start_idx: int | None = None) -> Array:
    """Gather ``trajectories[s:s + subsequence_len]`` [T, B, ...] for start indices [B, N].

    Returns [subsequence_len, B, N, ...].

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> traj = jnp.arange(20.0).reshape(10, 2)   # [T, B]
        >>> rlax.extract_subsequences(traj, jnp.array([[0], [4]]), 3)[..., 0].tolist()   # [len, B, starts]
        [[0.0, 9.0], [2.0, 11.0], [4.0, 13.0]]
    """
    if max_valid_start_idx is not None:
        min_len = max_valid_start_idx + subsequence_len
        if trajectories.shape[0] < min_len:
            raise AssertionError(f"Expected len >= {min_len}, but trajectories length is: "
                                 f"{trajectories.shape[0]}. (extract_subsequences: "
                                 "max_valid_start_idx + subsequence_len > len(trajectories))")
    batch_size, num_subs = start_indices.shape
    idx = (jnp.arange(subsequence_len)[:, None, None]
           * jnp.ones((subsequence_len, batch_size, num_subs), dtype=jnp.int32) + start_indices)
    return trajectories[idx, jnp.arange(batch_size)[None, :, None], ...]


def sample_start_indices(rng_key: Array, batch_size: int, num_start_indices: int,
                         max_valid_start_idx: int) -> Array:
    """Sample [batch_size, num_start_indices] distinct start indices in ``0..max_valid_start_idx``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> idx = rlax.sample_start_indices(fluxion.random.PRNGKey(0), 4, 2, 10)
        >>> idx.shape, bool(((idx >= 0) & (idx <= 10)).all())
        ((4, 2), True)
    """
    window = jnp.tile(jnp.arange(max_valid_start_idx + 1), (batch_size, 1))
    keys = jrandom.split(rng_key, batch_size)
    choose = fluxion.vmap(lambda k, e: jrandom.choice(k, e, shape=(num_start_indices,), replace=False))
    return choose(keys, window)
