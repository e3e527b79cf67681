"""Differentiable molecular dynamics for Fluxion (mirrors jax_md) with self-managing neighbor lists."""

from __future__ import annotations

__all__: list[str] = []
