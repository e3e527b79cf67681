"""A jitted scalar function called with a Python float and read back as a Python float.

``float(jit(grad(tanh))(1.0))``: the demo's first row and issue 28's dispatch target (a jitted
call whose result is read as a float). It times the whole round trip: the Python float becomes a
device scalar, the cached executable runs, and its result is copied back to the host. numpy
computes the same derivative, ``1 - tanh(x)**2``, on a float32 scalar.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "setup"]

NAME = "jit_scalar_float"
DESCRIPTION = "float(jit(grad(tanh))(1.0)): Python float in, Python float out (numpy: 1 - tanh**2)"
VARIANTS = ("numpy", "jax", "fluxion")
SIZES = (1.0,)


def setup(variant: str, size: float) -> Callable[[], Any]:
    """One call for ``variant`` at the point ``size`` (a Python float)."""
    b = backends.load(variant)
    if variant in ("jax", "fluxion"):
        xnp = b.np

        def tanh(x: Any) -> Any:
            y = xnp.exp(-2.0 * x)
            return (1.0 - y) / (1.0 + y)

        g = b.module.jit(b.module.grad(tanh))
        return lambda: float(g(size))
    x = np.float32(size)
    return lambda: float(1.0 - np.tanh(x) ** 2)
