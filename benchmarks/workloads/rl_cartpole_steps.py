"""Environment steps per second of a batch of CartPoles: vmap + scan under jit vs gymnasium.

``size`` CartPole-v1 environments take 100 steps with fixed random actions, auto-resetting
finished episodes (to a fixed start state, so every variant does the same work). Steps per second
is ``size * 100 / median``.

``fluxion``           ``fluxion_rl.envs.CartPole().step`` under ``vmap`` + ``lax.scan``, jitted.
``jax``               the same dynamics written once over ``xnp`` / ``lax``, run by jax (jitted).
``fluxion-generic``   that same generic code run by fluxion (isolates the environment's code).
``numpy``             the generic code vectorised over the batch with NumPy (a Python loop over time).
``numpy-gymnasium``   gymnasium's ``SyncVectorEnv`` of ``CartPole-v1`` (one Python env per copy).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "DEFAULT_REPS", "QUICK_REPS",
           "STEPS", "setup", "size_label", "cartpole_step"]

NAME = "rl_cartpole_steps"
DESCRIPTION = ("100 steps of N vectorised CartPole-v1 envs with auto-reset: fluxion_rl.envs / same "
               "code on jax and fluxion (vmap+scan, jit) / numpy / gymnasium SyncVectorEnv")
VARIANTS = ("numpy-gymnasium", "numpy", "jax", "fluxion", "fluxion-generic")
SIZES = (1024,)
QUICK_SIZES = (64,)
DEFAULT_REPS = 5
QUICK_REPS = 2
STEPS = 100


def size_label(size: int) -> str:
    """``1024 -> "n1024"`` (the number of environments)."""
    return f"n{size}"


def _actions(size: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 2, size=(STEPS, size)).astype(np.int32)


def cartpole_step(xnp: Any, state: Any, action: Any) -> tuple[Any, Any]:
    """gymnasium's CartPole dynamics on one or many states ``[..., 4]``: (new state, done)."""
    x, x_dot, theta, theta_dot = state[..., 0], state[..., 1], state[..., 2], state[..., 3]
    force = xnp.where(action == 1, 10.0, -10.0)
    cos, sin = xnp.cos(theta), xnp.sin(theta)
    temp = (force + 0.05 * theta_dot**2 * sin) / 1.1
    thetaacc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos**2 / 1.1))
    xacc = temp - 0.05 * thetaacc * cos / 1.1
    new = xnp.stack([x + 0.02 * x_dot, x_dot + 0.02 * xacc, theta + 0.02 * theta_dot,
                     theta_dot + 0.02 * thetaacc], axis=-1)
    limit = 12 * 2 * math.pi / 360
    done = (xnp.abs(new[..., 0]) > 2.4) | (xnp.abs(new[..., 2]) > limit)
    start = xnp.full(new.shape, 0.01, new.dtype)
    return xnp.where(done[..., None], start, new), done


def _generic(b: Any, size: int) -> Callable[[], Any]:
    import importlib

    lax = importlib.import_module(b.name + ".lax")
    xnp = b.np

    def rollout(state: Any, actions: Any) -> Any:
        def body(s: Any, a: Any) -> Any:
            s, done = b.module.vmap(lambda si, ai: cartpole_step(xnp, si, ai))(s, a)
            return s, done.sum()

        return lax.scan(body, state, actions)

    run = b.jit(rollout)
    state = b.asarray(np.full((size, 4), 0.01, np.float32))
    actions = b.asarray(_actions(size))
    return lambda: b.module.block_until_ready(run(state, actions))


def _fluxion_rl(size: int) -> Callable[[], Any]:
    import fluxion
    import fluxion.lax as lax
    import fluxion.numpy as jnp
    from fluxion_rl import envs

    env = envs.CartPole()

    def rollout(states: Any, actions: Any) -> Any:
        false = jnp.zeros((), bool)
        start = envs.EnvState(jnp.full((4,), 0.01, jnp.float32), jnp.zeros((), jnp.int32), false, false)

        def one(s: Any, a: Any) -> Any:
            s, _, _, terminated, truncated = env.step(s, a)
            done = terminated | truncated
            s = fluxion.tree_util.tree_map(lambda fresh, old: jnp.where(done, fresh, old), start, s)
            return s, done

        def body(s: Any, a: Any) -> Any:
            s, done = fluxion.vmap(one)(s, a)
            return s, done.sum()

        return lax.scan(body, states, actions)

    run = fluxion.jit(rollout)
    states = envs.EnvState(jnp.full((size, 4), 0.01, jnp.float32), jnp.zeros((size,), jnp.int32),
                           jnp.zeros((size,), bool), jnp.zeros((size,), bool))
    actions = jnp.asarray(_actions(size))
    return lambda: fluxion.block_until_ready(run(states, actions))


def _numpy(size: int) -> Callable[[], Any]:
    actions = _actions(size)

    def run() -> Any:
        state = np.full((size, 4), 0.01, np.float32)
        total = 0
        for a in actions:
            state, done = cartpole_step(np, state, a)
            total += int(done.sum())
        return state

    return run


def _gymnasium(size: int) -> Callable[[], Any]:
    import gymnasium

    vec = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("CartPole-v1") for _ in range(size)])
    vec.reset(seed=0)
    actions = _actions(size)

    def run() -> Any:
        for a in actions:
            out = vec.step(a)
        return out[0]

    return run


def setup(variant: str, size: int) -> Callable[[], Any]:
    """One repetition (100 steps of ``size`` environments), blocking until done."""
    if variant == "numpy-gymnasium":
        return _gymnasium(size)
    if variant == "numpy":
        return _numpy(size)
    if variant == "fluxion":
        return _fluxion_rl(size)
    b = backends.load(backends.backend_of(variant))
    return _generic(b, size)
