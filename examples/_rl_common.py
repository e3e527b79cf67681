"""Helpers shared by the CartPole agents: a small MLP, greedy evaluation, progress and the PNG curve."""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any, Callable, Iterable

import numpy as np

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as jrandom
import fluxion_nn as nnx


class MLP(nnx.Module):
    """A tanh multi-layer perceptron ``sizes[0] -> ... -> sizes[-1]``."""

    def __init__(self, sizes: list[int], rngs: nnx.Rngs, last_scale: float = 1.0):
        init = fluxion.nn.initializers.orthogonal
        self.layers = nnx.List([
            nnx.Linear(a, b, rngs=rngs,
                       kernel_init=init(last_scale if i == len(sizes) - 2 else float(np.sqrt(2))))
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))])

    def __call__(self, x: Any) -> Any:
        for layer in self.layers[:-1]:
            x = jnp.tanh(layer(x))
        return self.layers[-1](x)


def evaluate_greedy(env: Any, act: Callable[[Any], Any], key: Any, num_episodes: int = 100) -> np.ndarray:
    """Returns of ``num_episodes`` episodes run in parallel (one jit) with the greedy policy ``act``."""
    horizon = env.max_episode_steps

    @fluxion.jit
    def run(key):
        states, obs = fluxion.vmap(env.reset)(jrandom.split(key, num_episodes))

        def body(carry, _):
            states, obs, alive, total = carry
            states, obs, reward, terminated, truncated = fluxion.vmap(env.step)(states, act(obs))
            done = terminated | truncated  # ended episodes are absorbing (reward 0): alive is a check
            total = total + reward * alive
            return (states, obs, alive * (1.0 - done.astype(jnp.float32)), total), None

        init = (states, obs, jnp.ones(num_episodes), jnp.zeros(num_episodes))
        return lax.scan(body, init, None, length=horizon)[0][3]

    return np.asarray(run(key))


def progress(iterable: Iterable, total: int, desc: str, enabled: bool) -> Any:
    """tqdm when installed and enabled, else the iterable with a printed line every 10%."""
    if not enabled:
        return iterable
    try:
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc)
    except ImportError:
        def printing():
            for i, item in enumerate(iterable):
                if i % max(1, total // 10) == 0:
                    print(f"{desc}: {i}/{total}", flush=True)
                yield item
        return printing()


def save_curve(path: str, steps: list[float], returns: list[float], title: str,
               evals: list[tuple[float, float]] = ()) -> None:
    """Write the learning curve (training episodes and greedy evaluations) as a PNG, atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, returns, label="training episodes (sampled actions)")
    if evals:
        ax.plot([e[0] for e in evals], [e[1] for e in evals], "o-", markersize=3,
                label="greedy policy, 100 episodes")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.axhline(475, color="gray", linestyle="--", linewidth=0.8)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(suffix=".png", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=100)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    finally:
        plt.close(fig)


def run_cli(agent: str, doc: str, train: Callable[..., dict], config: Any, default_out: str,
            argv: list[str] | None = None) -> None:
    """The command line shared by the CartPole agents: ``--quiet``, ``--seed``, ``--out``; trains
    with ``train(config(seed=...), show_progress=..., curve_path=...)`` and prints the result."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=default_out, help="learning-curve PNG path")
    args = parser.parse_args(argv)
    result = train(config(seed=args.seed), show_progress=not args.quiet, curve_path=args.out)
    print(f"{agent}: {result['env_steps']} env steps in {result['train_seconds']:.1f} s; greedy return "
          f"over 100 episodes: {result['eval_mean_return']:.1f}; curve written to {args.out}")
