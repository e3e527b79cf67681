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
        state, obs, reward, terminated, truncated = step(state, action)
        np.testing.assert_allclose(np.asarray(obs), np.asarray(g_obs, np.float32), rtol=1e-4, atol=1e-5,
                                   err_msg=f"{name} step {i}")
        np.testing.assert_allclose(float(reward), g_rew, rtol=1e-4, atol=1e-5)
        assert bool(terminated) == bool(g_term), f"{name} step {i}"
        if bool(terminated) or bool(truncated):
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
            states, obs, reward, terminated, truncated = fluxion.vmap(env.step)(states, a)
            return states, (obs, reward, terminated | truncated)

        return lax.scan(body, states, actions)[1]

    obs, rewards, dones = rollout(keys, actions)
    assert obs.shape == (t, n, 4) and rewards.shape == (t, n) and dones.dtype == jnp.bool_
    step = fluxion.jit(env.step)
    for b in (0, n - 1):
        state, _ = env.reset(keys[b])
        for i in range(t):
            state, o, r, te, tr = step(state, actions[i, b])
            np.testing.assert_allclose(np.asarray(obs[i, b]), np.asarray(o), rtol=1e-6, atol=1e-7)
            assert bool(dones[i, b]) == bool(te | tr)


def test_step_autoreset_same_step():
    env = envs.make("CartPole-v1", max_episode_steps=3, autoreset_mode="same_step")
    state, _ = env.reset(jrandom.PRNGKey(0))
    step = fluxion.jit(env.step_autoreset)
    for i in range(3):
        last = state
        state, obs, reward, te, tr, info = step(jrandom.PRNGKey(i + 10), state, np.int32(0))
    assert bool(tr) and not bool(te) and float(reward) == 1.0 and int(state.t) == 0
    np.testing.assert_allclose(np.asarray(obs), np.asarray(env.reset(jrandom.PRNGKey(12))[1]))
    np.testing.assert_allclose(np.asarray(info["final_obs"]), np.asarray(env.step(last, 0)[1]), rtol=1e-5)
    with pytest.raises(ValueError, match="autoreset_mode must be 'next_step' or 'same_step'"):
        envs.make("CartPole-v1", autoreset_mode="never")


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
        state, obs, reward, terminated, truncated = host.step(state, 1)
        total += reward
        done = terminated or truncated
    assert 5 <= total < 100 and terminated  # always pushing right topples the pole quickly
    with pytest.raises(ValueError, match="the episode has ended; call reset"):
        host.step(state, 1)
    state, obs = host.reset(jrandom.PRNGKey(1))
    with pytest.raises(ValueError, match=r"argument `action` must be in \[0, 1\], got 3"):
        host.step(state, 3)
    host.close()


def test_gymnasium_adapter_takes_typed_keys():
    """``reset(fluxion.random.key(s))`` seeds gymnasium as ``reset(PRNGKey(s))`` (same raw data)."""
    host = envs.GymnasiumEnv("CartPole-v1")
    for seed in (0, 7):
        _, typed = host.reset(jrandom.key(seed))
        _, raw = host.reset(jrandom.PRNGKey(seed))
        np.testing.assert_array_equal(typed, raw)
    _, other = host.reset(jrandom.key(8))
    assert not np.array_equal(other, raw)
    host.close()


# ----------------------------------------------------------------------------- episode semantics

def _policy(name, obs, rng, env):
    """Actions that end episodes both ways: random ones topple CartPole; pumping energy drives
    MountainCar up the hill (terminated); Pendulum and Acrobot run into the time limit."""
    if name == "MountainCar-v0":
        return np.int32(2 if float(obs[1]) >= 0 else 0)
    return _random_action(env, rng)


@pytest.mark.parametrize("name,limit", [("CartPole-v1", 500), ("MountainCar-v0", 200),
                                        ("Pendulum-v1", 40), ("Acrobot-v1", 40)])
def test_episodes_match_gymnasium_step_by_step(name, limit):
    """Whole episodes with gymnasium's wrappers (TimeLimit included): the same start, the same
    actions give the same observations, rewards, terminated and truncated, and the same end."""
    env = envs.make(name, max_episode_steps=limit)
    gym_env = gym.make(name, max_episode_steps=limit)
    rng = np.random.default_rng(2)
    step = fluxion.jit(env.step)
    state, obs = env.reset(jrandom.PRNGKey(5))
    g_obs, _ = gym_env.reset(seed=0)
    _set_gym_state(gym_env.unwrapped, name, state.physics)
    total, g_total, n = 0.0, 0.0, 0
    while True:
        action = _policy(name, obs, rng, env)
        g_obs, g_rew, g_term, g_trunc, _ = gym_env.step(action if env.num_actions is None else int(action))
        state, obs, reward, terminated, truncated = step(state, action)
        n += 1
        np.testing.assert_allclose(np.asarray(obs), np.asarray(g_obs, np.float32), rtol=1e-4, atol=1e-4,
                                   err_msg=f"{name} step {n}")
        assert (bool(terminated), bool(truncated)) == (g_term, g_trunc), f"{name} step {n}"
        assert terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_ and reward.dtype == jnp.float32
        total += float(reward)
        g_total += float(g_rew)
        if g_term or g_trunc:
            break
    np.testing.assert_allclose(total, g_total, rtol=1e-4)
    expect_terminated = name in ("CartPole-v1", "MountainCar-v0")
    assert bool(terminated) == expect_terminated and bool(truncated) == (not expect_terminated)
    assert int(state.t) == n and (n < limit if expect_terminated else n == limit)
    # an ended episode must be reset ...
    with pytest.raises(ValueError, match=rf"{env.name}.step: the episode (terminated|was truncated) "
                                         rf"at step {n}; call reset"):
        env.step(state, _random_action(env, rng))
    # ... and inside jit (where it cannot raise) stepping it changes nothing and pays nothing
    after, obs2, reward2, te2, tr2 = step(state, _random_action(env, rng))
    assert float(reward2) == 0.0 and (bool(te2), bool(tr2)) == (bool(terminated), bool(truncated))
    np.testing.assert_array_equal(np.asarray(obs2), np.asarray(obs))
    assert int(after.t) == n


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_vectorised_autoreset_matches_gymnasium_vector_env(mode):
    """vmap(step_autoreset) against gymnasium's SyncVectorEnv in the same autoreset mode: rewards,
    terminated, truncated and observations agree on every step (new episodes start from the same
    states: gymnasium's are set to ours when they reset)."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv
    n, T, limit = 3, 45, 25
    env = envs.make("CartPole-v1", max_episode_steps=limit, autoreset_mode=mode)
    vec = SyncVectorEnv([lambda: gym.make("CartPole-v1", max_episode_steps=limit)] * n,
                        autoreset_mode={"next_step": AutoresetMode.NEXT_STEP,
                                        "same_step": AutoresetMode.SAME_STEP}[mode])
    vec.reset(seed=0)
    key = jrandom.PRNGKey(7)
    states, obs = fluxion.vmap(env.reset)(jrandom.split(key, n))
    for i in range(n):
        vec.envs[i].unwrapped.state = np.asarray(states.physics[i], np.float64)
    step = fluxion.jit(fluxion.vmap(env.step_autoreset))
    rng = np.random.default_rng(3)
    resets = ended_seen = 0
    for t in range(T):
        actions = rng.integers(0, 2, size=n).astype(np.int32)
        key, sub = jrandom.split(key)
        states, obs, reward, te, tr, info = step(jrandom.split(sub, n), states, actions)
        g_obs, g_rew, g_te, g_tr, g_info = vec.step(actions)
        fresh = np.asarray(states.t) == 0  # rows that started a new episode in this call
        for i in np.flatnonzero(fresh):  # gymnasium drew its own start: give it ours
            vec.envs[i].unwrapped.state = np.asarray(states.physics[i], np.float64)
            g_obs[i] = np.asarray(obs[i])
        resets += int(fresh.sum())
        ended_seen += int((g_te | g_tr).sum())
        np.testing.assert_array_equal(np.asarray(reward), g_rew.astype(np.float32), err_msg=f"t={t}")
        np.testing.assert_array_equal(np.asarray(te), g_te, err_msg=f"t={t}")
        np.testing.assert_array_equal(np.asarray(tr), g_tr, err_msg=f"t={t}")
        np.testing.assert_allclose(np.asarray(obs), g_obs, rtol=1e-4, atol=1e-4, err_msg=f"t={t}")
        if mode == "same_step" and (g_te | g_tr).any():
            done = g_te | g_tr
            np.testing.assert_allclose(np.asarray(info["final_obs"])[done],
                                       np.stack(g_info["final_obs"][done]), rtol=1e-4, atol=1e-4)
        if mode == "next_step":
            assert not (np.asarray(reward)[fresh]).any()  # the reset call pays nothing
    assert resets > 0 and ended_seen > 0
    vec.close()


def test_docs_rollout_counts_returns_like_gymnasium():
    """The rollout in docs/rl.md: random actions, returns summed over the whole horizon; each
    return is the length of the first episode (no reward after it ended), as in gymnasium."""
    import pathlib
    import re
    text = (pathlib.Path(__file__).parents[2] / "docs" / "rl.md").read_text()
    section = text[text.index("## Environments: `fluxion_rl.envs`"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope: dict = {}
    exec(compile(code, "docs/rl.md", "exec"), scope)
    returns = np.asarray(scope["returns"])
    actions = np.asarray(scope["actions"])
    starts = np.asarray(scope["starts"].physics)
    assert returns.shape == (actions.shape[1],)
    assert returns.max() < actions.shape[0]  # every episode ended within the horizon
    for b in range(actions.shape[1]):
        g = gym.make("CartPole-v1")
        g.reset(seed=0)
        g.unwrapped.state = starts[b].astype(np.float64)
        length = 0
        for a in actions[:, b]:
            _, _, term, trunc, _ = g.step(int(a))
            length += 1
            if term or trunc:
                break
        assert returns[b] == length
