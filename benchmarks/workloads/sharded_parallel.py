"""Many devices: a data-parallel MLP training step and a sharded matmul on 8 host CPU devices,
and the time to first result of a sharded ``jit``.

The worker gets 8 CPU devices (``--xla_force_host_platform_device_count=8``, set before the
backend starts). Mesh ``(4, 2)`` with axes ``("x", "y")`` (Auto axes in both libraries).

``dp_step``      cached call of the jitted data-parallel step of an MLP 256-512-512-10 (tanh,
                 squared error, SGD): batch ``size`` split over all 8 devices (``P(("x","y"))``),
                 parameters replicated; the compiler inserts the gradient all-reduce.
``matmul``       cached call of ``jit(x @ w)`` with ``x: (size, 1024)`` split ``P("x", None)``
                 and ``w: (1024, 1024)`` split ``P(None, "y")``.
``first_call``   a fresh sharded ``jit`` (a new function object, caches cleared) traced,
                 compiled and run once on sharded inputs: the time to first result.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES", "DEFAULT_REPS",
           "QUICK_REPS", "setup", "size_label"]

NAME = "sharded_parallel"
DESCRIPTION = ("8 host devices: data-parallel MLP step, sharded matmul (cached calls), and the "
               "first call of a fresh sharded jit")
VARIANTS = ("jax", "fluxion")
SIZES = (1024,)
QUICK_SIZES = (256,)
PHASES = ("dp_step", "matmul", "first_call")
DEFAULT_REPS = 10
QUICK_REPS = 3
LAYERS = (256, 512, 512, 10)


def size_label(size: int) -> str:
    """``1024 -> "b1024"`` (the batch size)."""
    return f"b{size}"


def _sharding_api(b: Any) -> tuple:
    if b.name.startswith("jax"):
        import jax
        auto = (jax.sharding.AxisType.Auto,) * 2
        mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=auto)
        return mesh, jax.sharding.NamedSharding, jax.sharding.PartitionSpec
    import fluxion
    auto = (fluxion.sharding.AxisType.Auto,) * 2
    mesh = fluxion.make_mesh((4, 2), ("x", "y"), axis_types=auto)
    return mesh, fluxion.sharding.NamedSharding, fluxion.sharding.PartitionSpec


def _make_loss(xnp: Any) -> Callable:
    def loss(params: Any, x: Any, y: Any) -> Any:
        for w, c in params[:-1]:
            x = xnp.tanh(x @ w + c)
        w, c = params[-1]
        return xnp.mean((x @ w + c - y) ** 2)
    return loss


def setup(variant: str, size: int) -> Callable[[], dict[str, float]]:
    """One self-timed repetition (``phase -> seconds``) for ``variant`` at batch ``size``."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_force_host_platform_device_count=8").strip()
    b = backends.load(variant)
    mod = b.module
    if len(mod.devices()) < 8:
        raise RuntimeError(f"{variant}: needs 8 devices, got {len(mod.devices())}")
    mesh, named, spec = _sharding_api(b)
    rep = named(mesh, spec())
    rng = np.random.default_rng(0)
    params = []
    for n_in, n_out in zip(LAYERS[:-1], LAYERS[1:]):
        w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        params.append((mod.device_put(w, rep), mod.device_put(np.zeros(n_out, np.float32), rep)))
    batch = named(mesh, spec(("x", "y")))
    x = mod.device_put(rng.standard_normal((size, LAYERS[0])).astype(np.float32), batch)
    y = mod.device_put(rng.standard_normal((size, LAYERS[-1])).astype(np.float32), batch)
    loss = _make_loss(b.np)

    def sgd(p: Any, xb: Any, yb: Any) -> Any:
        g = mod.grad(loss)(p, xb, yb)
        return mod.tree_util.tree_map(lambda a, d: a - 0.01 * d, p, g)

    step = mod.jit(sgd)
    a = mod.device_put(rng.standard_normal((size, 1024)).astype(np.float32),
                       named(mesh, spec("x", None)))
    w2 = mod.device_put(rng.standard_normal((1024, 1024)).astype(np.float32),
                        named(mesh, spec(None, "y")))
    matmul = mod.jit(lambda u, v: u @ v)
    mod.block_until_ready(step(params, x, y))
    mod.block_until_ready(matmul(a, w2))
    if variant == "fluxion":
        from fluxion.backend import dispatch
        clear = dispatch.clear_caches
    else:
        clear = mod.clear_caches

    def run() -> dict[str, float]:
        clear()
        t0 = time.perf_counter()
        fresh = mod.jit(lambda p, xb, yb: mod.grad(_make_loss(b.np))(p, xb, yb))
        mod.block_until_ready(fresh(params, x, y))
        t1 = time.perf_counter()
        mod.block_until_ready(step(params, x, y))  # re-warm after the cleared caches
        mod.block_until_ready(matmul(a, w2))
        t2 = time.perf_counter()
        for _ in range(5):
            out = step(params, x, y)
        mod.block_until_ready(out)
        t3 = time.perf_counter()
        for _ in range(5):
            out = matmul(a, w2)
        mod.block_until_ready(out)
        t4 = time.perf_counter()
        return {"first_call": t1 - t0, "dp_step": (t3 - t2) / 5, "matmul": (t4 - t3) / 5}

    return run
