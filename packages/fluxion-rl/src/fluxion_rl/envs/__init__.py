"""Jittable environments: pure ``reset(key)`` / ``step(state, action)`` functions (beyond rlax).

Batch them with ``fluxion.vmap`` and roll them out with ``fluxion.lax.scan`` inside ``fluxion.jit``:

    env = envs.make("CartPole-v1")
    states, obs = fluxion.vmap(env.reset)(fluxion.random.split(key, 1024))
"""

from __future__ import annotations

from typing import Any, Callable

from fluxion_rl.envs._classic import Acrobot, CartPole, MountainCar, Pendulum
from fluxion_rl.envs._core import Environment, EnvState
from fluxion_rl.envs._gridworld import CliffWalking
from fluxion_rl.envs._gymnasium import GymnasiumEnv

__all__ = ["Environment", "EnvState", "CartPole", "Pendulum", "MountainCar", "Acrobot", "CliffWalking",
           "GymnasiumEnv", "make", "registered"]

_REGISTRY: dict[str, Callable[..., Environment]] = {
    "CartPole-v1": lambda **kw: CartPole(**{"max_episode_steps": 500, **kw}),
    "CartPole-v0": lambda **kw: CartPole(**{"max_episode_steps": 200, **kw}),
    "Pendulum-v1": lambda **kw: Pendulum(**{"max_episode_steps": 200, **kw}),
    "MountainCar-v0": lambda **kw: MountainCar(**{"max_episode_steps": 200, **kw}),
    "Acrobot-v1": lambda **kw: Acrobot(**{"max_episode_steps": 500, **kw}),
    "CliffWalking-v1": lambda **kw: CliffWalking(**kw),
}


def registered() -> list[str]:
    """The names ``make`` knows.

    Example:
        >>> from fluxion_rl import envs
        >>> envs.registered()
        ['Acrobot-v1', 'CartPole-v0', 'CartPole-v1', 'CliffWalking-v1', 'MountainCar-v0', 'Pendulum-v1']
    """
    return sorted(_REGISTRY)


def make(name: str, **kwargs: Any) -> Environment:
    """Build a registered environment by its gymnasium id, e.g. ``make("CartPole-v1")``.

    Keyword arguments go to the environment's constructor (``max_episode_steps=...``), except
    ``autoreset_mode`` (``"next_step"``, gymnasium's default, or ``"same_step"``), which sets how
    ``step_autoreset`` starts new episodes.

    Example:
        >>> import fluxion
        >>> from fluxion_rl import envs
        >>> env = envs.make("CartPole-v0")
        >>> type(env).__name__, env.max_episode_steps, env.autoreset_mode
        ('CartPole', 200, 'next_step')
        >>> states, obs = fluxion.vmap(env.reset)(fluxion.random.split(fluxion.random.key(0), 8))
        >>> obs.shape
        (8, 4)
    """
    if name not in _REGISTRY:
        raise ValueError(f"envs.make: unknown environment {name!r}; known environments: "
                         f"{', '.join(registered())}")
    mode = kwargs.pop("autoreset_mode", "next_step")
    if mode not in ("next_step", "same_step"):
        raise ValueError(f"envs.make: autoreset_mode must be 'next_step' or 'same_step'; got {mode!r}")
    env = _REGISTRY[name](**kwargs)
    env.autoreset_mode = mode
    return env
