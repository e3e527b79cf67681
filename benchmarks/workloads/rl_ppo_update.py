"""One PPO update, jitted: GAE over a rollout, then one epoch of minibatch Adam steps.

The same code runs on ``fluxion`` + ``fluxion_rl`` and on ``jax`` + ``rlax`` (the RL library is
swapped with the backend). ``jax-generic`` / ``fluxion-generic`` run it with the five RL functions
written here once over each library's ``numpy``/``lax`` (:func:`generic_rl`, rlax's definitions),
so the row needs no RL library: the same source program handed to both compilers. Rollout: 128 steps x ``size`` environments of CartPole-sized data
(observations 4, 2 actions); actor and critic are 4-64-64-{2,1} tanh MLPs; 4 minibatches; the
loss is rlax's clipped surrogate + 0.5 * L2 value loss + 0.01 * entropy loss; Adam is written out.
``step`` is a cached call of the jitted update (blocked); ``first_call`` is the first call of the
fresh ``jit`` in the worker process (trace + compile + run), as train_step's and pyhpc's.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES", "DEFAULT_REPS",
           "QUICK_REPS", "setup", "size_label", "make_update", "make_inputs", "generic_rl"]

NAME = "rl_ppo_update"
DESCRIPTION = ("PPO update (GAE + 4 minibatch Adam steps on a 128 x N rollout, actor-critic MLPs), jitted: "
               "fluxion + fluxion_rl vs jax + rlax")
VARIANTS = ("jax", "fluxion", "jax-generic", "fluxion-generic")
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


class _Softmax:
    def __init__(self, xnp: Any, nn: Any) -> None:
        self._xnp, self._nn = xnp, nn

    def logprob(self, actions: Any, logits: Any) -> Any:
        logp = self._nn.log_softmax(logits)
        return self._xnp.take_along_axis(logp, actions[..., None], axis=-1)[..., 0]


def generic_rl(b: Any) -> Any:
    """The five rlax functions the update uses, written over ``b``'s numpy/lax (rlax's
    definitions: categorical log-probability, the clipped surrogate with a stop-gradient on the
    advantages, ``0.5 * d**2``, the negated weighted mean entropy, truncated GAE as a reverse scan).

    Example:
        >>> from benchmarks import backends
        >>> rl = generic_rl(backends.load("jax"))                         # doctest: +SKIP
        >>> float(rl.l2_loss(2.0, 0.0))                                   # doctest: +SKIP
        2.0
    """
    import types

    xnp, mod = b.np, b.module
    lax = importlib.import_module(b.name + ".lax")
    nn = importlib.import_module(b.name + ".nn")

    def clipped_surrogate_pg_loss(ratio: Any, adv: Any, epsilon: float) -> Any:
        adv = lax.stop_gradient(adv)
        clipped = xnp.clip(ratio, 1.0 - epsilon, 1.0 + epsilon)
        return -xnp.mean(xnp.minimum(ratio * adv, clipped * adv))

    def l2_loss(predictions: Any, targets: Any) -> Any:
        return 0.5 * (predictions - targets) ** 2

    def entropy_loss(logits: Any, weights: Any) -> Any:
        logp = nn.log_softmax(logits)
        return -xnp.mean(-xnp.sum(xnp.exp(logp) * logp, axis=-1) * weights)

    def truncated_generalized_advantage_estimation(rewards: Any, discounts: Any, lambda_: float,
                                                   values: Any) -> Any:
        lambdas = xnp.ones_like(discounts) * lambda_
        deltas = rewards + discounts * values[1:] - values[:-1]

        def body(acc: Any, xs: Any) -> Any:
            delta, discount, lam = xs
            acc = delta + discount * lam * acc
            return acc, acc
        _, adv = lax.scan(body, xnp.zeros((), deltas.dtype), (deltas, discounts, lambdas),
                          reverse=True)
        return adv

    del mod
    return types.SimpleNamespace(
        softmax=lambda: _Softmax(xnp, nn), clipped_surrogate_pg_loss=clipped_surrogate_pg_loss,
        l2_loss=l2_loss, entropy_loss=entropy_loss,
        truncated_generalized_advantage_estimation=truncated_generalized_advantage_estimation)


def make_inputs(b: Any, rng: np.random.Generator, size: int) -> tuple[Any, Any, Any]:
    """``(params, adam_state, rollout)`` as ``b`` arrays for ``size`` environments."""
    to = b.asarray
    tree = _params(rng)
    params = {k: [(to(w), to(bias)) for w, bias in tree[k]] for k in ("actor", "critic")}
    zeros = b.module.tree_util.tree_map(lambda x: b.np.zeros_like(x), params)
    state = (zeros, zeros, to(np.zeros((), np.int32)))
    rollout = (to(rng.standard_normal((T, size, 4)).astype(np.float32)),
               to(rng.integers(0, 2, (T, size)).astype(np.int32)),
               to(np.full((T, size), -0.69, np.float32)),
               to(np.ones((T, size), np.float32)),
               to((rng.uniform(size=(T, size)) < 0.02).astype(np.float32)),
               to(rng.standard_normal((T + 1, size)).astype(np.float32)))
    return params, state, rollout


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
    """One self-timed repetition, ``{"step": s}`` (``first_call_s`` set from the timed first call)."""
    b = backends.load(backends.backend_of(variant))
    if variant.endswith("-generic"):
        rl = generic_rl(b)
    else:
        rl = importlib.import_module("fluxion_rl" if variant == "fluxion" else "rlax")
    params, state, rollout = make_inputs(b, np.random.default_rng(0), size)
    update = make_update(b, rl, size)
    t0 = time.perf_counter()
    b.block(update(params, state, rollout)[2])
    first = time.perf_counter() - t0

    def run() -> dict[str, float]:
        t1 = time.perf_counter()
        for _ in range(5):
            out = update(params, state, rollout)
        b.block(out[2])
        return {"step": (time.perf_counter() - t1) / 5}

    run.first_call_s = first  # type: ignore[attr-defined]
    return run
