"""Double DQN solves CartPole-v1, with environments, replay buffer and learner in one jitted loop.

Built from ``fluxion_rl`` (double Q-learning, the Huber loss, epsilon-greedy exploration, periodic
target updates and the jittable CartPole), ``fluxion_nn`` (the Q-network) and ``fluxion_optim``
(Adam). Each call of the jitted ``run_chunk`` steps 8 environments, writes the transitions into a
circular replay buffer and takes one gradient step per iteration, for a few hundred iterations.
It writes ``rl_cartpole_dqn.png`` (the learning curve) into ``--out`` (default
``build/examples/rl_cartpole_dqn/``) and prints the greedy policy's average return over 100 episodes.

    .venv/bin/python examples/rl_cartpole_dqn.py            # a minute or two (``--quiet``: no bar)
    .venv/bin/python examples/rl_cartpole_dqn.py --quick    # a few chunks, to check it runs
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as jrandom
import fluxion_nn as nnx
import fluxion_optim as optax
import fluxion_rl as rlax
from fluxion_rl import envs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rl_common import MLP, evaluate_greedy, progress, run_cli, save_curve  # noqa: E402


@dataclass(frozen=True)
class Config:
    num_envs: int = 8
    buffer_size: int = 50_000
    batch_size: int = 128
    learning_rate: float = 5e-4
    gamma: float = 0.99
    eps_start: float = 1.0
    eps_end: float = 0.02
    eps_decay_steps: int = 40_000  # environment steps
    learning_starts: int = 2_000  # environment steps before the first update
    target_period: int = 250  # gradient steps between target-network copies
    chunk: int = 500  # iterations per jitted call (each: num_envs env steps + one gradient step)
    total_timesteps: int = 400_000
    target_return: float = 490.0
    seed: int = 0


def train(config: Config = Config(), show_progress: bool = True, curve_path: str | None = None) -> dict:
    """Train double DQN; returns the final 100-episode greedy evaluation and the learning curve."""
    env = envs.make("CartPole-v1", autoreset_mode="same_step")
    n = config.num_envs
    graphdef, params = nnx.split(MLP([4, 128, 128, env.num_actions], nnx.Rngs(config.seed)))
    tx = optax.adam(config.learning_rate)

    def q_values(p, obs):
        return nnx.merge(graphdef, p)(obs)

    def loss_fn(p, target_p, obs, actions, rewards, discounts, next_obs):
        td = fluxion.vmap(rlax.double_q_learning)(
            q_values(p, obs), actions, rewards, discounts, q_values(target_p, next_obs), q_values(p, next_obs))
        return jnp.mean(rlax.huber_loss(td))

    def iteration(carry, _):
        p, target_p, opt_state, buf, states, obs, ep_ret, step, updates, key = carry
        key, k_act, k_env, k_batch = jrandom.split(key, 4)
        frac = jnp.clip(step / config.eps_decay_steps, 0.0, 1.0)
        epsilon = config.eps_start + frac * (config.eps_end - config.eps_start)
        actions = rlax.epsilon_greedy(epsilon).sample(k_act, q_values(p, obs))
        states, next_obs, rewards, terminated, truncated, info = fluxion.vmap(env.step_autoreset)(
            jrandom.split(k_env, n), states, actions)
        dones = terminated | truncated
        # Write the n transitions at the buffer's cursor (the buffer is circular). A truncated
        # episode is bootstrapped from its last observation (info["final_obs"]; next_obs is the new
        # episode's first); only a terminated one has no future value.
        index = (step // n * n + jnp.arange(n)) % config.buffer_size
        discounts = config.gamma * (1.0 - terminated.astype(jnp.float32))
        buf = {k: buf[k].at[index].set(v) for k, v in
               dict(obs=obs, actions=actions, rewards=rewards, discounts=discounts,
                    next_obs=info["final_obs"]).items()}
        step = step + n
        filled = jnp.minimum(step, config.buffer_size)
        idx = jrandom.randint(k_batch, (config.batch_size,), 0, filled)
        batch = [buf[k][idx] for k in ("obs", "actions", "rewards", "discounts", "next_obs")]
        grads = fluxion.grad(loss_fn)(p, target_p, *batch)
        upd, new_opt_state = tx.update(grads, opt_state, p)
        learn = step >= config.learning_starts
        p = rlax.conditional_update(optax.apply_updates(p, upd), p, learn)
        opt_state = rlax.conditional_update(new_opt_state, opt_state, learn)
        updates = updates + learn.astype(jnp.int32)
        target_p = rlax.periodic_update(p, target_p, updates, config.target_period)
        ep_ret = ep_ret + rewards
        finished = jnp.where(dones, ep_ret, 0.0)
        ep_ret = jnp.where(dones, 0.0, ep_ret)
        return (p, target_p, opt_state, buf, states, next_obs, ep_ret, step, updates, key), (finished, dones)

    @fluxion.jit
    def run_chunk(carry):
        carry, (finished, dones) = lax.scan(iteration, carry, None, length=config.chunk)
        return carry, finished.sum(), dones.sum()

    key = jrandom.PRNGKey(config.seed)
    key, k_reset, k_eval = jrandom.split(key, 3)
    states, obs = fluxion.vmap(env.reset)(jrandom.split(k_reset, n))
    size = config.buffer_size
    buf = dict(obs=jnp.zeros((size, 4)), actions=jnp.zeros((size,), jnp.int32), rewards=jnp.zeros(size),
               discounts=jnp.zeros(size), next_obs=jnp.zeros((size, 4)))
    carry = (params, params, tx.init(params), buf, states, obs, jnp.zeros(n), jnp.zeros((), jnp.int32),
             jnp.zeros((), jnp.int32), key)

    def act(p):
        return lambda o: jnp.argmax(q_values(p, o), axis=-1).astype(jnp.int32)

    num_chunks = config.total_timesteps // (config.chunk * n)
    curve_steps, curve_returns, evals = [], [], []
    best_score, best_params = -1.0, params
    start = time.perf_counter()
    bar = progress(range(num_chunks), num_chunks, "DQN CartPole", show_progress)
    env_steps = 0
    for i in bar:
        carry, fin_sum, fin_count = run_chunk(carry)
        env_steps = (i + 1) * config.chunk * n
        if int(fin_count) > 0:
            curve_steps.append(env_steps)
            curve_returns.append(float(fin_sum) / int(fin_count))
        k_eval, sub = jrandom.split(k_eval)
        score = float(evaluate_greedy(env, act(carry[0]), sub, num_episodes=100).mean())
        evals.append((env_steps, score))
        if score > best_score:
            best_score, best_params = score, carry[0]
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(train_return=f"{curve_returns[-1] if curve_returns else 0:.1f}", greedy=f"{score:.1f}")
        if score >= config.target_return:
            break
    train_seconds = time.perf_counter() - start
    # The reported score: the best checkpoint (by the periodic evaluation) on 100 fresh episodes.
    final = evaluate_greedy(env, act(best_params), jrandom.PRNGKey(config.seed + 12345), num_episodes=100)
    if curve_path:
        save_curve(curve_path, curve_steps, curve_returns, "Double DQN on CartPole-v1 (8 envs)", evals)
    return {"eval_mean_return": float(final.mean()), "eval_returns": final, "train_seconds": train_seconds,
            "env_steps": env_steps, "curve": (curve_steps, curve_returns),
            "evals": evals}


def main(argv: list[str] | None = None) -> None:
    run_cli("DQN", __doc__, train, Config, "rl_cartpole_dqn", argv,
            quick={"total_timesteps": 8 * 4 * 500, "learning_starts": 1_000})


if __name__ == "__main__":
    main()
