"""Run a host (gymnasium) environment through the same ``reset`` / ``step`` interface."""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion.dtypes import prng_key

__all__ = ["GymnasiumEnv"]


class GymnasiumEnv:
    """Adapter from a gymnasium environment (an id or an instance) to ``reset(key)`` / ``step``.

    It runs on the host, outside ``jit``: the state is the wrapped environment itself, so it is not a
    pytree and cannot be vmapped. ``reset(key)`` seeds gymnasium with an integer drawn from ``key``;
    ``step`` returns gymnasium's ``terminated`` and ``truncated`` and, like the pure environments,
    raises ``ValueError`` when called on an ended episode. Observations and rewards are NumPy values.

    Example: gymnasium's CliffWalking gives what the pure ``CliffWalking`` gives.

        >>> import fluxion
        >>> from fluxion_rl.envs import GymnasiumEnv
        >>> env = GymnasiumEnv("CliffWalking-v1")
        >>> state, obs = env.reset(fluxion.random.key(0))
        >>> state, obs, reward, terminated, truncated = env.step(state, 1)  # right: into the cliff
        >>> int(obs), float(reward), bool(terminated)
        (36, -100.0, False)
        >>> env.close()
    """

    def __init__(self, env: Any, **make_kwargs: Any):
        if isinstance(env, str):
            import gymnasium  # reason: optional dependency, only needed for host environments

            env = gymnasium.make(env, **make_kwargs)
        self.env = env
        self.name = getattr(getattr(env, "spec", None), "id", type(env).__name__)
        space = env.action_space
        self.num_actions = int(space.n) if hasattr(space, "n") else None
        self._ended = False

    def reset(self, key: Any) -> tuple[Any, np.ndarray]:
        """Reset with a seed derived from ``key`` (a typed ``key`` or a raw ``PRNGKey``); returns
        ``(self.env, observation)``."""
        if jnp.issubdtype(key.dtype, prng_key):  # a typed key: seed from its raw uint32 data
            key = jrandom.key_data(key)
        seed = int(np.asarray(key).ravel()[-1]) % (2**31)
        obs, _ = self.env.reset(seed=seed)
        self._ended = False
        return self.env, np.asarray(obs)

    def step(self, state: Any, action: Any) -> tuple[Any, np.ndarray, np.float32, np.bool_, np.bool_]:
        """One host step: returns ``(state, observation, reward, terminated, truncated)``."""
        if self._ended:
            raise ValueError(f"{self.name}.step: the episode has ended; call reset(key) to start a new one.")
        action = np.asarray(action)
        if self.num_actions is not None:
            if not 0 <= int(action) < self.num_actions:
                raise ValueError(f"{self.name}.step: argument `action` must be in [0, {self.num_actions - 1}], "
                                 f"got {int(action)}")
            action = int(action)
        obs, reward, terminated, truncated, _ = state.step(action)
        self._ended = bool(terminated or truncated)
        return state, np.asarray(obs), np.float32(reward), np.bool_(terminated), np.bool_(truncated)

    def close(self) -> None:
        """Close the wrapped environment."""
        self.env.close()
