"""Reinforcement-learning building blocks for Fluxion (mirrors rlax), jittable environments and agents."""

from __future__ import annotations

__all__: list[str] = []
