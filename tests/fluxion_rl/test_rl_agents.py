"""The CartPole agents learn (slow: they train for a minute or two each)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name):
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up in sys.modules
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(EXAMPLES))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rl_cartpole_ppo", "rl_cartpole_dqn"])
def test_agent_solves_cartpole(name, tmp_path):
    pytest.importorskip("matplotlib")
    module = _load(name)
    png = tmp_path / "curve.png"
    result = module.train(module.Config(), show_progress=False, curve_path=str(png))
    assert result["eval_mean_return"] >= 475.0, result["evals"]
    assert result["eval_returns"].shape == (100,)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    steps, returns = result["curve"]
    assert len(steps) == len(returns) > 0


def test_ppo_update_runs_one_jit(tmp_path):
    """A tiny PPO run (2 updates) goes through the whole jitted update and writes its curve."""
    module = _load("rl_cartpole_ppo")
    cfg = module.Config(num_envs=64, num_steps=8, total_timesteps=64 * 8 * 2, eval_every=2)
    png = tmp_path / "ppo.png"
    result = module.train(cfg, show_progress=False, curve_path=str(png))
    assert len(result["evals"]) == 1 and result["eval_returns"].shape == (100,)
    assert png.exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rl_cartpole_ppo", "rl_cartpole_dqn"])
def test_agent_solves_cartpole_for_9_of_10_seeds(name):
    """The examples' promise (docs/rl.md): in their default settings, the greedy policy averages
    >= 475 over 100 fresh episodes (CartPole-v1 solved) for at least 9 of the seeds 0-9."""
    module = _load(name)
    scores = {}
    for seed in range(10):
        result = module.train(module.Config(seed=seed), show_progress=False, curve_path=None)
        scores[seed] = result["eval_mean_return"]
        assert result["eval_returns"].shape == (100,)
    solved = [s for s, score in scores.items() if score >= 475.0]
    assert len(solved) >= 9, scores
