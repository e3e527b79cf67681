"""The environment interface: pure ``reset(key)`` and ``step(state, action)`` functions on pytrees."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import fluxion.numpy as jnp
from fluxion.tree_util import tree_map

Array = Any

__all__ = ["Environment", "EnvState"]


class EnvState(NamedTuple):
    """An environment's state: its ``physics`` (a tuple of arrays) and the step count ``t``."""

    physics: Any
    t: Array


def concrete_value(x: Any) -> np.ndarray | None:
    """``x`` as a NumPy array when it is concrete, or None inside jit/vmap (a tracer)."""
    try:
        return np.asarray(x)
    except Exception:  # noqa: BLE001 - any tracer refuses conversion; that is what we detect
        return None


class Environment:
    """Base class of the pure-function environments (subclasses define the dynamics).

    ``reset(key) -> (state, obs)`` and ``step(state, action) -> (state, obs, reward, done)`` are pure:
    batch them with ``fluxion.vmap`` and roll them out with ``lax.scan`` inside ``fluxion.jit``.
    ``done`` is true when the episode terminates or reaches ``max_episode_steps`` (truncation).

    Out-of-range actions: given a concrete action (outside ``jit``/``vmap``), ``step`` raises
    ``ValueError``; given a traced action it cannot check, so it clips the action into the valid
    range (the nearest valid discrete action, or the nearest allowed torque).
    """

    name: str = "Environment"
    max_episode_steps: int | None = None
    num_actions: int | None = None  # discrete action spaces
    action_low: float | None = None  # continuous action spaces
    action_high: float | None = None
    action_shape: tuple[int, ...] = ()
    observation_shape: tuple[int, ...] = ()
    observation_dtype: Any = jnp.float32

    # --- to be defined by subclasses -------------------------------------------------------------
    def _reset_physics(self, key: Array) -> Any:
        raise NotImplementedError

    def _step_physics(self, physics: Any, action: Array) -> tuple[Any, Array, Array]:
        """Returns (new physics, reward, terminated)."""
        raise NotImplementedError

    def _observe(self, physics: Any) -> Array:
        raise NotImplementedError

    # --- the public pure functions ----------------------------------------------------------------
    def reset(self, key: Array) -> tuple[EnvState, Array]:
        """Start an episode: returns ``(state, observation)``. Example: ``s, o = env.reset(key)``."""
        physics = self._reset_physics(key)
        return EnvState(physics, jnp.zeros((), jnp.int32)), self._observe(physics)

    def step(self, state: EnvState, action: Array) -> tuple[EnvState, Array, Array, Array]:
        """Advance one step: returns ``(state, observation, reward, done)``.

        Example: ``s, o, r, d = env.step(s, 1)``.
        """
        action = self._checked_action(action)
        physics, reward, terminated = self._step_physics(state.physics, action)
        t = state.t + 1
        done = terminated
        if self.max_episode_steps is not None:
            done = jnp.logical_or(done, t >= self.max_episode_steps)
        return EnvState(physics, t), self._observe(physics), jnp.asarray(reward).astype(jnp.float32), done

    def step_autoreset(self, key: Array, state: EnvState, action: Array
                       ) -> tuple[EnvState, Array, Array, Array]:
        """``step``, then start a new episode (with ``key``) where this one ended.

        The returned observation is the new episode's first one where ``done``; reward and done
        belong to the step taken. Example: ``s, o, r, d = fluxion.vmap(env.step_autoreset)(keys, s, a)``.
        """
        state, obs, reward, done = self.step(state, action)
        fresh_state, fresh_obs = self.reset(key)
        state = tree_map(lambda new, old: jnp.where(done, new, old), fresh_state, state)
        return state, jnp.where(done, fresh_obs, obs), reward, done

    def _checked_action(self, action: Array) -> Array:
        value = concrete_value(action)
        if self.num_actions is not None:
            if value is not None:
                if not np.issubdtype(value.dtype, np.integer) or value.shape != ():
                    raise ValueError(f"{self.name}.step: argument `action` must be an integer scalar in "
                                     f"[0, {self.num_actions - 1}], got {value!r}")
                if not 0 <= int(value) < self.num_actions:
                    raise ValueError(f"{self.name}.step: argument `action` must be in [0, "
                                     f"{self.num_actions - 1}], got {int(value)}")
            return jnp.clip(jnp.asarray(action).astype(jnp.int32), 0, self.num_actions - 1)
        action = jnp.asarray(action, jnp.float32)
        if tuple(action.shape) != tuple(self.action_shape):
            raise ValueError(f"{self.name}.step: argument `action` must have shape {self.action_shape}, "
                             f"got {tuple(action.shape)}")
        if value is not None and (not np.all(np.isfinite(value)) or np.any(value < self.action_low)
                                  or np.any(value > self.action_high)):
            raise ValueError(f"{self.name}.step: argument `action` must lie in [{self.action_low}, "
                             f"{self.action_high}], got {value!r}")
        return jnp.clip(action, self.action_low, self.action_high)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
