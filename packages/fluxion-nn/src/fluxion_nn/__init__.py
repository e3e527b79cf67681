"""Neural-network modules for Fluxion (mirrors flax.nnx, plus a Haiku-style namespace) and crash-safe checkpoints."""

from __future__ import annotations

__all__: list[str] = []
