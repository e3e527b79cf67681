"""Gradient transformations and optimizers for Fluxion (mirrors optax)."""

from __future__ import annotations

__all__: list[str] = []
