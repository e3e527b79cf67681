"""Helpers shared by the CartPole agents: a small MLP, greedy evaluation, progress and the PNG curve."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as jrandom
import fluxion_nn as nnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cli import out_dir, parser, save_figure  # noqa: E402


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


def step_label(value: float, _pos: Any = None) -> str:
    """A step count as a short tick label: 125000 -> '125k', 1200000 -> '1.2M'."""
    if abs(value) >= 1e6:
        return f"{value / 1e6:g}M"
    return f"{value / 1e3:g}k" if abs(value) >= 1e3 else f"{value:g}"


def save_curve(path: str, steps: list[float], returns: list[float], title: str,
               evals: list[tuple[float, float]] = ()) -> None:
    """Write the learning curve (training episodes and greedy evaluations) as a PNG, atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, returns, label="training episodes (sampled actions)")
    if evals:
        ax.plot([e[0] for e in evals], [e[1] for e in evals], "o-", markersize=3,
                label="greedy policy, 100 episodes")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.axhline(475, color="gray", linestyle="--", linewidth=0.8, label="solved (475)")
    # At most 6 ticks, written 125k / 1.2M: six-digit labels side by side run together.
    ax.xaxis.set_major_locator(MaxNLocator(6))
    ax.xaxis.set_major_formatter(FuncFormatter(step_label))
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    try:
        save_figure(fig, path)
    finally:
        plt.close(fig)


def run_cli(agent: str, doc: str, train: Callable[..., dict], config: Any, name: str,
            argv: list[str] | None = None, quick: dict | None = None) -> None:
    """The command line shared by the CartPole agents: ``--quick`` (``config`` updated with
    ``quick``), ``--out DIR`` (created first; the learning curve is ``DIR/<name>.png``),
    ``--quiet`` and ``--seed``."""
    p = parser(doc, name, quick_help="a short run (a few updates; the agent will not solve "
               "CartPole) to check that everything works")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    out = out_dir(args, name)  # created before any work
    curve = os.path.join(out, f"{name}.png")
    cfg = config(seed=args.seed, **((quick or {}) if args.quick else {}))
    result = train(cfg, show_progress=not args.quiet, curve_path=curve)
    print(f"{agent}: {result['env_steps']} env steps in {result['train_seconds']:.1f} s; greedy return "
          f"over 100 episodes: {result['eval_mean_return']:.1f}; curve written to {curve}")
