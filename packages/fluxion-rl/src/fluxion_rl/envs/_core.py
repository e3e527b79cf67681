"""The environment interface: pure ``reset(key)`` and ``step(state, action)`` functions on pytrees."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import fluxion.numpy as jnp
from fluxion.tree_util import tree_map

Array = Any

__all__ = ["Environment", "EnvState"]


class EnvState(NamedTuple):
    """An environment's state: its ``physics`` (a tuple of arrays), the step count ``t``, and
    whether the episode has ``terminated`` or been ``truncated`` (by ``max_episode_steps``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_rl.envs import CliffWalking, EnvState
        >>> env = CliffWalking(max_episode_steps=2)
        >>> state, obs = env.reset(fluxion.random.key(0))
        >>> isinstance(state, EnvState), EnvState._fields
        (True, ('physics', 't', 'terminated', 'truncated'))
        >>> state, obs, reward, terminated, truncated = env.step(state, jnp.array(0))
        >>> state, obs, reward, terminated, truncated = env.step(state, jnp.array(0))
        >>> int(state.t), bool(state.terminated), bool(state.truncated)
        (2, False, True)
    """

    physics: Any
    t: Array
    terminated: Array
    truncated: Array


def concrete_value(x: Any) -> np.ndarray | None:
    """``x`` as a NumPy array when it is concrete, or None inside jit/vmap (a tracer)."""
    try:
        return np.asarray(x)
    except Exception:  # noqa: BLE001 - any tracer refuses conversion; that is what we detect
        return None


class Environment:
    """Base class of the pure-function environments (subclasses define the dynamics).

    ``reset(key) -> (state, obs)`` and ``step(state, action) -> (state, obs, reward, terminated,
    truncated)`` are pure functions with gymnasium's episode semantics: ``terminated`` when the task
    ended (the pole fell, the goal was reached), ``truncated`` when ``max_episode_steps`` was
    reached first. An ended episode must be reset: ``step`` on it raises ``ValueError`` given a
    concrete state; inside ``jit``/``vmap`` it cannot raise, so the step is a no-op (same state and
    observation, reward 0, the same ``terminated``/``truncated``). For vectorised rollouts,
    ``step_autoreset`` resets ended episodes with gymnasium's vector-env conventions. Batch them
    with ``fluxion.vmap`` and roll them out with ``lax.scan`` inside ``fluxion.jit``.

    Out-of-range actions: given a concrete action (outside ``jit``/``vmap``), ``step`` raises
    ``ValueError``; given a traced action it cannot check, so it clips the action into the valid
    range (the nearest valid discrete action, or the nearest allowed torque).

    Example: four steps of CliffWalking in one ``lax.scan`` (up, right, right, then down into the cliff).

        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_rl import envs
        >>> env = envs.make("CliffWalking-v1")
        >>> state, obs = env.reset(fluxion.random.key(0))
        >>> def policy_step(state, action):
        ...     state, obs, reward, terminated, truncated = env.step(state, action)
        ...     return state, reward
        >>> state, rewards = fluxion.lax.scan(policy_step, state, jnp.array([0, 1, 1, 2]))
        >>> rewards.tolist(), int(state.physics), bool(state.terminated)
        ([-1.0, -1.0, -1.0, -100.0], 36, False)
    """

    name: str = "Environment"
    max_episode_steps: int | None = None
    num_actions: int | None = None  # discrete action spaces
    action_low: float | None = None  # continuous action spaces
    action_high: float | None = None
    action_shape: tuple[int, ...] = ()
    observation_shape: tuple[int, ...] = ()
    observation_dtype: Any = jnp.float32
    autoreset_mode: str = "next_step"

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
        false = jnp.zeros((), bool)
        return EnvState(physics, jnp.zeros((), jnp.int32), false, false), self._observe(physics)

    def step(self, state: EnvState, action: Array) -> tuple[EnvState, Array, Array, Array, Array]:
        """Advance one step: returns ``(state, observation, reward, terminated, truncated)``.

        Example: ``s, o, r, terminated, truncated = env.step(s, 1)``.
        """
        ended = jnp.logical_or(state.terminated, state.truncated)
        if concrete_value(ended) is not None and bool(concrete_value(ended)):
            why = "terminated" if bool(concrete_value(state.terminated)) else "was truncated"
            raise ValueError(f"{self.name}.step: the episode {why} at step {int(state.t)}; call "
                             "reset(key) to start a new one (or use step_autoreset).")
        action = self._checked_action(action)
        physics, reward, terminated = self._step_physics(state.physics, action)
        t = state.t + 1
        terminated = jnp.asarray(terminated, bool)
        if self.max_episode_steps is not None:
            truncated = jnp.logical_and(~terminated, t >= self.max_episode_steps)
        else:
            truncated = jnp.zeros((), bool)
        new = EnvState(physics, t, terminated, truncated)
        # an ended episode is absorbing under jit: nothing moves and nothing is paid
        new = tree_map(lambda old, nxt: jnp.where(ended, old, nxt), state, new)
        reward = jnp.where(ended, 0.0, jnp.asarray(reward).astype(jnp.float32)).astype(jnp.float32)
        return new, self._observe(new.physics), reward, new.terminated, new.truncated

    def step_autoreset(self, key: Array, state: EnvState, action: Array
                       ) -> tuple[EnvState, Array, Array, Array, Array, dict[str, Array]]:
        """``step`` with gymnasium's vector-env auto-reset; returns ``(state, obs, reward,
        terminated, truncated, info)``.

        ``autoreset_mode="next_step"`` (gymnasium's default): the step that ends an episode returns
        its last observation; the next call ignores ``action``, starts a new episode with ``key``
        and returns its first observation with reward 0 and ``terminated = truncated = False``
        (``info`` is empty). ``"same_step"``: the step that ends an episode returns the new
        episode's first observation, with the ended episode's reward and flags and its last
        observation in ``info["final_obs"]``. Set the mode with ``make(..., autoreset_mode=...)``.
        Example: ``s, o, r, te, tr, info = fluxion.vmap(env.step_autoreset)(keys, s, a)``.
        """
        fresh_state, fresh_obs = self.reset(key)
        if self.autoreset_mode == "next_step":
            ended = jnp.logical_or(state.terminated, state.truncated)
            running = state._replace(terminated=jnp.zeros((), bool), truncated=jnp.zeros((), bool))
            stepped, obs, reward, terminated, truncated = self.step(running, action)
            new = tree_map(lambda f, s: jnp.where(ended, f, s), fresh_state, stepped)
            return (new, jnp.where(ended, fresh_obs, obs), jnp.where(ended, 0.0, reward),
                    new.terminated, new.truncated, {})
        stepped, obs, reward, terminated, truncated = self.step(state, action)
        ended = jnp.logical_or(terminated, truncated)
        new = tree_map(lambda f, s: jnp.where(ended, f, s), fresh_state, stepped)
        return (new, jnp.where(ended, fresh_obs, obs), reward, terminated, truncated,
                {"final_obs": obs})

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
