"""Eager dispatch overhead: one elementwise float32 add, not jitted.

For small shapes this measures the per-op cost of the eager path (argument checks, dtype
promotion, executable-cache lookup, launch, wait); at 1e6 elements the kernel starts to matter.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "setup"]

NAME = "eager_dispatch"
DESCRIPTION = "x + y on float32 arrays, eagerly (numpy: x + y; jax/fluxion: jnp.add(x, y), blocked)"
VARIANTS = ("numpy", "jax", "fluxion", "torch")
SIZES = ([], [100], [1000], [1_000_000])
QUICK_SIZES = SIZES


def setup(variant: str, size: list[int]) -> Callable[[], Any]:
    """Return one repetition of ``x + y`` for ``variant`` on float32 arrays of shape ``size``."""
    b = backends.load(variant)
    rng = np.random.default_rng(0)
    x = b.asarray(np.asarray(rng.standard_normal(tuple(size)), dtype=np.float32))
    y = b.asarray(np.asarray(rng.standard_normal(tuple(size)), dtype=np.float32))
    if variant in ("jax", "fluxion"):
        add = b.np.add

        def run() -> Any:
            return add(x, y).block_until_ready()

        return run

    def run_eager() -> Any:
        return x + y

    return run_eager
