"""Per-example gradients of an MLP loss: ``jit(vmap(grad(loss), in_axes=(None, 0, 0)))``.

The same MLP as ``mlp_grad`` at batch 32 and 128.

``step``         a cached call, blocked.
``trace_lower``  ``jit(vmap(grad(loss))).lower(...)`` of a fresh function: tracing three nested
                 transformations and emitting StableHLO.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from benchmarks import backends
from benchmarks.workloads.mlp_grad import LAYERS, make_loss, make_params

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "PHASES", "DEFAULT_REPS", "QUICK_REPS",
           "setup", "size_label"]

NAME = "per_example_grads"
DESCRIPTION = "jit(vmap(grad(mlp_loss), in_axes=(None, 0, 0))): cached step and trace+lower"
VARIANTS = ("jax", "fluxion")
SIZES = (32, 128)
PHASES = ("step", "trace_lower")
DEFAULT_REPS = 10
QUICK_REPS = 3


def size_label(size: int) -> str:
    """``32 -> "b32"`` (the batch size)."""
    return f"b{size}"


def setup(variant: str, size: int) -> Callable[[], dict[str, float]]:
    """One self-timed repetition (``phase -> seconds``) for ``variant`` at batch ``size``."""
    b = backends.load(variant)
    rng = np.random.default_rng(0)
    params = make_params(b, rng)
    x = b.asarray(rng.standard_normal((size, 1, LAYERS[0])).astype(np.float32))
    y = b.asarray(rng.standard_normal((size, 1, LAYERS[-1])).astype(np.float32))
    m = b.module

    def make() -> Callable:
        return m.jit(m.vmap(m.grad(make_loss(b.np)), in_axes=(None, 0, 0)))

    step = make()
    b.module.block_until_ready(step(params, x, y))

    def run() -> dict[str, float]:
        t0 = time.perf_counter()
        for _ in range(5):
            out = step(params, x, y)
        b.module.block_until_ready(out)
        t1 = time.perf_counter()
        make().lower(params, x, y)
        t2 = time.perf_counter()
        return {"step": (t1 - t0) / 5, "trace_lower": t2 - t1}

    return run
