"""SciPy-compatible layer for Fluxion (mirrors jax.scipy): special, linalg, stats, optimize, integrate, signal, ..."""

from __future__ import annotations

__all__: list[str] = []
