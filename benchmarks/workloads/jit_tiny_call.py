"""Cached jit call overhead: ``f(x) = x + 1`` on a float32 scalar, already compiled.

This is the fast path of a jitted call: flatten arguments, look up the cache, execute, wrap the
output, wait. numpy's baseline is a plain Python function call.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "setup"]

NAME = "jit_tiny_call"
DESCRIPTION = "cached call of jit(lambda x: x + 1) on a float32 scalar, blocked (numpy: plain call)"
VARIANTS = ("numpy", "jax", "fluxion", "numba")
SIZES = ([],)


def _f(x: Any) -> Any:
    return x + 1


def setup(variant: str, size: list[int]) -> Callable[[], Any]:
    """Return one cached call of the jitted ``x + 1`` for ``variant`` (``size`` is the shape)."""
    b = backends.load(variant)
    x = b.asarray(np.full(tuple(size), 1.0, dtype=np.float32))
    if variant in ("jax", "fluxion"):
        f = b.jit(_f)

        def run() -> Any:
            return f(x).block_until_ready()

        return run
    if variant == "numba":
        # numba compiles per argument type; a 0-d array is passed as a float32 scalar.
        xs = np.float32(x) if x.ndim == 0 else x
        f_nb = b.jit(_f)
        return lambda: f_nb(xs)
    return lambda: _f(x)
