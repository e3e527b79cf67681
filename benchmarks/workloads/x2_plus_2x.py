"""A memory-bound elementwise expression: ``x*x + x*2.0`` on an n x n float32 array.

Compares fused (jitted) against op-by-op (eager) execution. Each variant is its own row: the
``-jit`` ones compile the whole expression once, the ``-eager`` ones dispatch three ops.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "DEFAULT_REPS", "setup",
           "size_label"]

NAME = "x2_plus_2x"
DESCRIPTION = "x*x + x*2.0 on an n x n float32 array; jitted and eager variants"
VARIANTS = ("numpy", "jax-jit", "jax-eager", "fluxion-jit", "fluxion-eager", "numba-jit", "torch")
SIZES = (5000,)
QUICK_SIZES = (500,)
DEFAULT_REPS = 15


def size_label(size: int) -> str:
    """``500 -> "500x500"``."""
    return f"{size}x{size}"


def _expr(x: Any) -> Any:
    return x * x + x * 2.0


def setup(variant: str, size: int) -> Callable[[], Any]:
    """Return one evaluation of ``x*x + x*2.0`` on an ``size`` x ``size`` array for ``variant``."""
    backend, _, mode = variant.partition("-")
    b = backends.load(backend)
    x_np = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    x = b.asarray(x_np)
    if backend in ("jax", "fluxion"):
        f = b.jit(_expr) if mode == "jit" else _expr
        return lambda: f(x).block_until_ready()
    if backend == "numba":
        import numba

        @numba.njit(fastmath=False)
        def kernel(a: np.ndarray) -> np.ndarray:
            out = np.empty_like(a)
            two = np.float32(2.0)
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    v = a[i, j]
                    out[i, j] = v * v + v * two
            return out

        return lambda: kernel(x)
    return lambda: _expr(x)
