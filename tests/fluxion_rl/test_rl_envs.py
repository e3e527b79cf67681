"""fluxion_rl.envs: gymnasium's dynamics step by step, vmap + scan under jit, action rules, make."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion_rl import envs

gym = pytest.importorskip("gymnasium")

STEPS = 60


def _random_action(env, rng):
    if env.num_actions is not None:
        return np.int32(rng.integers(env.num_actions))
    return rng.uniform(env.action_low, env.action_high, size=env.action_shape).astype(np.float32)


def _set_gym_state(gym_env, name, physics):
    p = np.asarray(physics)
    if name == "MountainCar-v0":
        gym_env.state = (np.float64(p[0]), np.float64(p[1]))
    elif name == "CliffWalking-v1":
        gym_env.s = int(p)
    else:
        gym_env.state = p.astype(np.float64)


@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "Acrobot-v1",
                                  "CliffWalking-v1"])
def test_dynamics_match_gymnasium(name):
    env = envs.make(name)
    gym_env = gym.make(name).unwrapped
    gym_env.reset(seed=0)
    rng = np.random.default_rng(1)
    step = fluxion.jit(env.step)
    reset = fluxion.jit(env.reset)
    key = jrandom.PRNGKey(0)
    state, obs = reset(key)
    assert obs.shape == env.observation_shape and obs.dtype == env.observation_dtype
    terminations = 0
    for i in range(STEPS):
        action = _random_action(env, rng)
        _set_gym_state(gym_env, name, state.physics)
        g_obs, g_rew, g_term, _, _ = gym_env.step(action if env.num_actions is None else int(action))
        state, obs, reward, done = step(state, action)
        np.testing.assert_allclose(np.asarray(obs), np.asarray(g_obs, np.float32), rtol=1e-4, atol=1e-5,
                                   err_msg=f"{name} step {i}")
        np.testing.assert_allclose(float(reward), g_rew, rtol=1e-4, atol=1e-5)
        truncated = env.max_episode_steps is not None and int(state.t) >= env.max_episode_steps
        assert bool(done) == (bool(g_term) or truncated), f"{name} step {i}"
        if bool(done):
            terminations += 1
            key, sub = jrandom.split(key)
            state, obs = reset(sub)
            gym_env.reset(seed=i)  # clears gymnasium's record of a finished episode
    if name == "CartPole-v1":
        assert terminations > 0  # random actions topple the pole: the termination rule was exercised


def test_resets_lie_in_gymnasium_bounds():
    keys = jrandom.split(jrandom.PRNGKey(3), 256)
    bounds = {"CartPole-v1": (-0.05, 0.05), "Acrobot-v1": (-0.1, 0.1)}
    for name, (lo, hi) in bounds.items():
        _, obs = fluxion.vmap(envs.make(name).reset)(keys)
        phys = np.asarray(fluxion.vmap(envs.make(name).reset)(keys)[0].physics)
        assert phys.min() >= lo and phys.max() <= hi and phys.std() > 0.01 * (hi - lo), name
        assert obs.shape == (256,) + envs.make(name).observation_shape
    phys = np.asarray(fluxion.vmap(envs.make("MountainCar-v0").reset)(keys)[0].physics)
    assert phys[:, 0].min() >= -0.6 and phys[:, 0].max() <= -0.4 and np.all(phys[:, 1] == 0)


def test_vmap_scan_inside_jit_matches_single_steps():
    env = envs.make("CartPole-v1")
    n, t = 8, 20
    actions = np.random.default_rng(0).integers(0, 2, size=(t, n)).astype(np.int32)
    keys = jrandom.split(jrandom.PRNGKey(1), n)

    @fluxion.jit
    def rollout(keys, actions):
        states, obs = fluxion.vmap(env.reset)(keys)

        def body(states, a):
            states, obs, reward, done = fluxion.vmap(env.step)(states, a)
            return states, (obs, reward, done)

        return lax.scan(body, states, actions)[1]

    obs, rewards, dones = rollout(keys, actions)
    assert obs.shape == (t, n, 4) and rewards.shape == (t, n) and dones.dtype == jnp.bool_
    step = fluxion.jit(env.step)
    for b in (0, n - 1):
        state, _ = env.reset(keys[b])
        for i in range(t):
            state, o, r, d = step(state, actions[i, b])
            np.testing.assert_allclose(np.asarray(obs[i, b]), np.asarray(o), rtol=1e-6, atol=1e-7)
            assert bool(dones[i, b]) == bool(d)


def test_step_autoreset():
    env = envs.CartPole(max_episode_steps=3)
    state, _ = env.reset(jrandom.PRNGKey(0))
    step = fluxion.jit(env.step_autoreset)
    for i in range(3):
        state, obs, reward, done = step(jrandom.PRNGKey(i + 10), state, np.int32(0))
    assert bool(done) and int(state.t) == 0
    np.testing.assert_allclose(np.asarray(obs), np.asarray(env.reset(jrandom.PRNGKey(12))[1]))


def test_out_of_range_actions():
    cart = envs.CartPole()
    state, _ = cart.reset(jrandom.PRNGKey(0))
    with pytest.raises(ValueError, match=r"CartPole.step: argument `action` must be in \[0, 1\], got 2"):
        cart.step(state, 2)
    with pytest.raises(ValueError, match=r"CartPole.step: argument `action` must be an integer"):
        cart.step(state, 0.5)
    pend = envs.Pendulum()
    p_state, _ = pend.reset(jrandom.PRNGKey(0))
    with pytest.raises(ValueError, match=r"Pendulum.step: argument `action` must lie in \[-2.0, 2.0\]"):
        pend.step(p_state, np.array([3.0], np.float32))
    with pytest.raises(ValueError, match=r"Pendulum.step: argument `action` must have shape \(1,\)"):
        pend.step(p_state, np.float32(1.0))
    # Inside jit the documented rule is to clip: 7 acts as 1, -3 as 0; a torque of 5 as 2.
    step = fluxion.jit(cart.step)
    np.testing.assert_allclose(np.asarray(step(state, np.int32(7))[1]), np.asarray(step(state, np.int32(1))[1]))
    np.testing.assert_allclose(np.asarray(step(state, np.int32(-3))[1]), np.asarray(step(state, np.int32(0))[1]))
    p_step = fluxion.jit(pend.step)
    np.testing.assert_allclose(np.asarray(p_step(p_state, np.array([5.0], np.float32))[1]),
                               np.asarray(p_step(p_state, np.array([2.0], np.float32))[1]))


def test_make_lists_known_names():
    with pytest.raises(ValueError, match=r"unknown environment 'CartPole-v9'; known environments: .*Acrobot-v1"):
        envs.make("CartPole-v9")
    assert envs.make("CartPole-v1", max_episode_steps=7).max_episode_steps == 7
    assert set(envs.registered()) >= {"CartPole-v1", "Pendulum-v1", "MountainCar-v0", "Acrobot-v1",
                                      "CliffWalking-v1"}


def test_gymnasium_adapter():
    host = envs.GymnasiumEnv("CartPole-v1")
    state, obs = host.reset(jrandom.PRNGKey(0))
    assert obs.shape == (4,)
    total, done = 0.0, False
    while not done:
        state, obs, reward, done = host.step(state, 1)
        total += reward
    assert 5 <= total < 100  # always pushing right topples the pole quickly
    with pytest.raises(ValueError, match=r"argument `action` must be in \[0, 1\], got 3"):
        host.step(state, 3)
    host.close()
