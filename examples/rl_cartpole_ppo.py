"""PPO solves CartPole-v1 with 64 environments stepped inside one jitted update.

Built from ``fluxion_rl`` (GAE, the clipped surrogate loss, the softmax policy and the jittable
CartPole), ``fluxion_nn`` (the actor-critic MLPs) and ``fluxion_optim`` (Adam). One call of the
jitted ``update`` collects a rollout from all environments with ``vmap`` + ``scan`` and runs the PPO
epochs on it. It writes ``rl_cartpole_ppo.png`` (the learning curve) into ``--out`` (default
``build/examples/rl_cartpole_ppo/``) and prints the greedy policy's average return over 100 episodes.

    .venv/bin/python examples/rl_cartpole_ppo.py            # about a minute (``--quiet``: no bar)
    .venv/bin/python examples/rl_cartpole_ppo.py --quick    # a few updates, to check it runs
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    num_envs: int = 64
    num_steps: int = 32
    total_timesteps: int = 600_000
    learning_rate: float = 2.5e-3
    update_epochs: int = 4
    num_minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    eval_every: int = 10
    target_return: float = 490.0
    seed: int = 0


class ActorCritic(nnx.Module):
    def __init__(self, obs_size: int, num_actions: int, rngs: nnx.Rngs):
        self.actor = MLP([obs_size, 64, 64, num_actions], rngs, last_scale=0.01)
        self.critic = MLP([obs_size, 64, 64, 1], rngs, last_scale=1.0)

    def __call__(self, obs: Any) -> tuple[Any, Any]:
        return self.actor(obs), self.critic(obs)[..., 0]


def train(config: Config = Config(), show_progress: bool = True, curve_path: str | None = None) -> dict:
    """Train PPO; returns the final 100-episode greedy evaluation and the learning curve."""
    env = envs.make("CartPole-v1", autoreset_mode="same_step")
    key = jrandom.PRNGKey(config.seed)
    graphdef, params = nnx.split(ActorCritic(4, env.num_actions, nnx.Rngs(config.seed)))
    batch = config.num_envs * config.num_steps
    num_updates = config.total_timesteps // batch
    minibatch = batch // config.num_minibatches
    schedule = optax.linear_schedule(config.learning_rate, 0.0,
                                     num_updates * config.update_epochs * config.num_minibatches)
    tx = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(schedule, eps=1e-5))
    policy = rlax.softmax()

    def apply(p, obs):
        return nnx.merge(graphdef, p)(obs)

    def loss_fn(p, obs, actions, old_logp, advantages, targets):
        logits, values = apply(p, obs)
        ratio = jnp.exp(policy.logprob(actions, logits) - old_logp)
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        pg = rlax.clipped_surrogate_pg_loss(ratio, advantages, config.clip_eps)
        vf = jnp.mean(rlax.l2_loss(values, targets))
        ent = rlax.entropy_loss(logits, jnp.ones(logits.shape[0]))
        return pg + config.vf_coef * vf + config.ent_coef * ent

    def env_step(carry, _):
        p, states, obs, ep_ret, key = carry
        key, k_act, k_env = jrandom.split(key, 3)
        logits, values = apply(p, obs)
        actions = policy.sample(k_act, logits)
        logp = policy.logprob(actions, logits)
        states, next_obs, rewards, terminated, truncated, _ = fluxion.vmap(env.step_autoreset)(
            jrandom.split(k_env, config.num_envs), states, actions)
        dones = terminated | truncated
        ep_ret = ep_ret + rewards
        finished = jnp.where(dones, ep_ret, 0.0)
        ep_ret = jnp.where(dones, 0.0, ep_ret)
        return (p, states, next_obs, ep_ret, key), (obs, actions, logp, values, rewards, dones, finished)

    @fluxion.jit
    def update(runner):
        p, opt_state, states, obs, ep_ret, key = runner
        (_, states, obs, ep_ret, key), traj = lax.scan(
            env_step, (p, states, obs, ep_ret, key), None, length=config.num_steps)
        t_obs, t_act, t_logp, t_val, t_rew, t_done, t_fin = traj
        last_values = apply(p, obs)[1]
        values = jnp.concatenate([t_val, last_values[None]], axis=0)
        discounts = config.gamma * (1.0 - t_done.astype(jnp.float32))
        gae = fluxion.vmap(rlax.truncated_generalized_advantage_estimation, in_axes=(1, 1, None, 1), out_axes=1)
        advantages = gae(t_rew, discounts, config.gae_lambda, values)
        targets = advantages + t_val
        flat = [x.reshape((batch,) + x.shape[2:]) for x in (t_obs, t_act, t_logp, advantages, targets)]

        def epoch(carry, _):
            p, opt_state, key = carry
            key, k_perm = jrandom.split(key)
            perm = jrandom.permutation(k_perm, batch)
            shuffled = [x[perm].reshape((config.num_minibatches, minibatch) + x.shape[1:]) for x in flat]

            def minibatch_step(carry, mb):
                p, opt_state = carry
                loss, grads = fluxion.value_and_grad(loss_fn)(p, *mb)
                updates, opt_state = tx.update(grads, opt_state, p)
                return (optax.apply_updates(p, updates), opt_state), loss

            (p, opt_state), losses = lax.scan(minibatch_step, (p, opt_state), shuffled)
            return (p, opt_state, key), losses.mean()

        (p, opt_state, key), losses = lax.scan(epoch, (p, opt_state, key), None, length=config.update_epochs)
        stats = (t_fin.sum(), t_done.sum(), losses.mean())
        return (p, opt_state, states, obs, ep_ret, key), stats

    key, k_reset, k_eval = jrandom.split(key, 3)
    states, obs = fluxion.vmap(env.reset)(jrandom.split(k_reset, config.num_envs))
    runner = (params, tx.init(params), states, obs, jnp.zeros(config.num_envs), key)

    def act(p):
        return lambda o: jnp.argmax(apply(p, o)[0], axis=-1).astype(jnp.int32)

    curve_steps, curve_returns, evals = [], [], []
    start = time.perf_counter()
    bar = progress(range(num_updates), num_updates, "PPO CartPole", show_progress)
    env_steps = 0
    for i in bar:
        runner, (fin_sum, fin_count, loss) = update(runner)
        env_steps = (i + 1) * batch
        if int(fin_count) > 0:
            curve_steps.append((i + 1) * batch)
            curve_returns.append(float(fin_sum) / int(fin_count))
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(avg_return=f"{curve_returns[-1]:.1f}")
        if (i + 1) % config.eval_every == 0:
            k_eval, sub = jrandom.split(k_eval)
            score = float(evaluate_greedy(env, act(runner[0]), sub, num_episodes=100).mean())
            evals.append(((i + 1) * batch, score))
            if score >= config.target_return:
                break
    train_seconds = time.perf_counter() - start
    final = evaluate_greedy(env, act(runner[0]), jrandom.PRNGKey(config.seed + 12345), num_episodes=100)
    if curve_path:
        save_curve(curve_path, curve_steps, curve_returns, "PPO on CartPole-v1 (64 envs)", evals)
    return {"eval_mean_return": float(final.mean()), "eval_returns": final, "train_seconds": train_seconds,
            "env_steps": env_steps, "curve": (curve_steps, curve_returns),
            "evals": evals}


def main(argv: list[str] | None = None) -> None:
    run_cli("PPO", __doc__, train, Config, "rl_cartpole_ppo", argv,
            quick={"total_timesteps": 10 * 64 * 32, "eval_every": 5})


if __name__ == "__main__":
    main()
