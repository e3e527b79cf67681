"""One PPO update, jitted: GAE over a rollout, then one epoch of minibatch Adam steps.

The same code runs on ``fluxion`` + ``fluxion_rl`` and on ``jax`` + ``rlax`` (the RL library is
swapped with the backend). Rollout: 128 steps x ``size`` environments of CartPole-sized data
(observations 4, 2 actions); actor and critic are 4-64-64-{2,1} tanh MLPs; 4 minibatches; the
loss is rlax's clipped surrogate + 0.5 * L2 value loss + 0.01 * entropy loss; Adam is written out.
``step`` is a cached call of the jitted update (blocked); ``first_call`` traces, compiles and runs
a fresh one.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES", "DEFAULT_REPS",
           "QUICK_REPS", "setup", "size_label", "make_update"]

NAME = "rl_ppo_update"
DESCRIPTION = ("PPO update (GAE + 4 minibatch Adam steps on a 128 x N rollout, actor-critic MLPs), jitted: "
               "fluxion + fluxion_rl vs jax + rlax")
VARIANTS = ("jax", "fluxion")
SIZES = (64,)
QUICK_SIZES = (16,)
PHASES = ("step", "first_call")
DEFAULT_REPS = 10
QUICK_REPS = 3
T = 128
MINIBATCHES = 4


def size_label(size: int) -> str:
    """``64 -> "n64"`` (environments in the rollout)."""
    return f"n{size}"


def _params(rng: np.random.Generator) -> dict:
    def mlp(sizes):
        return [((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32))
                for a, b in zip(sizes[:-1], sizes[1:])]
    return {"actor": mlp([4, 64, 64, 2]), "critic": mlp([4, 64, 64, 1])}


def make_update(b: Any, rl: Any, size: int) -> Callable[..., Any]:
    """A fresh jitted ``update(params, adam_state, rollout) -> (params, adam_state, loss)``."""
    xnp, mod = b.np, b.module
    lax = importlib.import_module(b.name + ".lax")
    tree_map = mod.tree_util.tree_map
    batch = T * size
    mb = batch // MINIBATCHES

    def forward(layers, x):
        for w, bias in layers[:-1]:
            x = xnp.tanh(x @ w + bias)
        w, bias = layers[-1]
        return x @ w + bias

    def loss_fn(p, obs, actions, old_logp, adv, targets):
        logits = forward(p["actor"], obs)
        values = forward(p["critic"], obs)[:, 0]
        logp = rl.softmax().logprob(actions, logits)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg = rl.clipped_surrogate_pg_loss(xnp.exp(logp - old_logp), adv, 0.2)
        return pg + 0.5 * xnp.mean(rl.l2_loss(values, targets)) + 0.01 * rl.entropy_loss(logits, xnp.ones(mb))

    def adam(p, state, g, lr=2.5e-4, b1=0.9, b2=0.999, eps=1e-5):
        m, v, count = state
        count = count + 1
        m = tree_map(lambda m_, g_: b1 * m_ + (1 - b1) * g_, m, g)
        v = tree_map(lambda v_, g_: b2 * v_ + (1 - b2) * g_ * g_, v, g)
        p = tree_map(lambda p_, m_, v_: p_ - lr * (m_ / (1 - b1**count)) / (xnp.sqrt(v_ / (1 - b2**count)) + eps),
                     p, m, v)
        return p, (m, v, count)

    def update(p, state, rollout):
        obs, actions, logp, rewards, dones, values = rollout
        discounts = 0.99 * (1.0 - dones)
        gae = mod.vmap(rl.truncated_generalized_advantage_estimation, in_axes=(1, 1, None, 1), out_axes=1)
        adv = gae(rewards, discounts, 0.95, values)
        targets = adv + values[:-1]
        flat = [x.reshape((MINIBATCHES, mb) + x.shape[2:]) for x in (obs, actions, logp, adv, targets)]

        def step(carry, minibatch):
            p, state = carry
            loss, g = mod.value_and_grad(loss_fn)(p, *minibatch)
            p, state = adam(p, state, g)
            return (p, state), loss

        (p, state), losses = lax.scan(step, (p, state), flat)
        return p, state, losses.mean()

    return b.jit(update)


def setup(variant: str, size: int) -> Callable[[], dict[str, float]]:
    """One self-timed repetition: ``{"step": s, "first_call": s}``."""
    b = backends.load(variant)
    rl = importlib.import_module("fluxion_rl" if variant == "fluxion" else "rlax")
    rng = np.random.default_rng(0)
    to = b.asarray
    tree = _params(rng)
    params = [[(to(w), to(bias)) for w, bias in tree[k]] for k in ("actor", "critic")]
    params = {"actor": params[0], "critic": params[1]}
    zeros = b.module.tree_util.tree_map(lambda x: b.np.zeros_like(x), params)
    state = (zeros, zeros, to(np.zeros((), np.int32)))
    rollout = (to(rng.standard_normal((T, size, 4)).astype(np.float32)),
               to(rng.integers(0, 2, (T, size)).astype(np.int32)),
               to(np.full((T, size), -0.69, np.float32)),
               to(np.ones((T, size), np.float32)),
               to((rng.uniform(size=(T, size)) < 0.02).astype(np.float32)),
               to(rng.standard_normal((T + 1, size)).astype(np.float32)))
    update = make_update(b, rl, size)
    b.block(update(params, state, rollout)[2])
    if variant == "fluxion":
        from fluxion.backend import dispatch  # the benchmark (not the package) may reach internals

        clear = dispatch.clear_caches
    else:
        clear = b.module.clear_caches  # jax also reuses executables of identical modules

    def run() -> dict[str, float]:
        clear()
        t0 = time.perf_counter()
        b.block(make_update(b, rl, size)(params, state, rollout)[2])
        t1 = time.perf_counter()
        b.block(update(params, state, rollout)[2])  # re-warm the cached update's dispatch
        t1 = time.perf_counter()
        for _ in range(5):
            out = update(params, state, rollout)
        b.block(out[2])
        t2 = time.perf_counter()
        return {"first_call": t1 - t0, "step": (t2 - t1) / 5}

    return run
