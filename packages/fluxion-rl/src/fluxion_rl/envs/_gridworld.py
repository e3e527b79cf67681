"""A gridworld: gymnasium's CliffWalking (4 x 12 grid, a cliff along the bottom row)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion_rl.envs._core import Environment

Array = Any

__all__ = ["CliffWalking"]


class CliffWalking(Environment):
    """Walk from the bottom-left to the bottom-right corner of a 4 x 12 grid along a cliff.

    Actions 0..3 = up, right, down, left; reward -1 per step and -100 for stepping into the cliff
    (which sends the agent back to the start); terminates at the goal. The observation is the cell
    index ``row * 12 + col`` (int32), as in gymnasium's ``CliffWalking-v1`` (deterministic version).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_rl.envs import CliffWalking
        >>> env = CliffWalking()
        >>> state, obs = env.reset(fluxion.random.key(0))
        >>> int(obs)
        36
        >>> state, obs, reward, terminated, truncated = env.step(state, jnp.array(1))  # into the cliff
        >>> int(obs), float(reward), bool(terminated)
        (36, -100.0, False)
        >>> state, obs, reward, terminated, truncated = env.step(state, jnp.array(0))  # up
        >>> int(obs), float(reward)
        (24, -1.0)
    """

    name = "CliffWalking"
    num_actions = 4
    observation_shape = ()
    observation_dtype = jnp.int32
    shape = (4, 12)

    def __init__(self, max_episode_steps: int | None = None):
        self.max_episode_steps = max_episode_steps

    @property
    def start_index(self) -> int:
        return (self.shape[0] - 1) * self.shape[1]

    def _reset_physics(self, key: Array) -> Array:
        del key  # the start cell is fixed
        return jnp.asarray(self.start_index, jnp.int32)

    def _step_physics(self, physics: Array, action: Array) -> tuple[Array, Array, Array]:
        rows, cols = self.shape
        row, col = physics // cols, physics % cols
        d_row = jnp.array([-1, 0, 1, 0], jnp.int32)[action]
        d_col = jnp.array([0, 1, 0, -1], jnp.int32)[action]
        row = jnp.clip(row + d_row, 0, rows - 1)
        col = jnp.clip(col + d_col, 0, cols - 1)
        cliff = (row == rows - 1) & (col >= 1) & (col <= cols - 2)
        index = jnp.where(cliff, self.start_index, row * cols + col).astype(jnp.int32)
        reward = jnp.where(cliff, -100.0, -1.0)
        terminated = jnp.logical_and(~cliff, (row == rows - 1) & (col == cols - 1))
        return index, reward, terminated

    def _observe(self, physics: Array) -> Array:
        return physics
