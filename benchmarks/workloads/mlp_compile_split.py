"""Compile-path cost of an MLP forward pass, split into phases.

MLP 784-512-512-10 with tanh hidden layers, batch 128, float32. Every repetition builds a fresh
Python function and a fresh ``jit`` object, so no tracing, lowering or compile cache can hit, and
reports these timings:

``trace_lower``  ``jit(f).lower(params, x)``: trace to the staged program and lower to StableHLO.
``compile``      ``lowered.compile()``: XLA compilation of that module.
``first_call``   a second fresh ``jit(f)`` called once and blocked: the whole first-call path.
``compile_cpu``, ``first_call_cpu``
                 the process CPU seconds (all threads) of the same two steps: much less noisy
                 than wall time on a loaded machine.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "PHASES", "DEFAULT_REPS", "QUICK_REPS",
           "LAYERS", "setup", "size_label"]

NAME = "mlp_compile_split"
DESCRIPTION = ("MLP 784-512-512-10 (tanh) forward, batch 128: trace+lower / compile / first call, "
               "fresh jit each rep")
VARIANTS = ("jax", "fluxion")
SIZES = (128,)
PHASES = ("trace_lower", "compile", "first_call", "compile_cpu", "first_call_cpu")
DEFAULT_REPS = 10
QUICK_REPS = 3
LAYERS = (784, 512, 512, 10)


def size_label(size: int) -> str:
    """``128 -> "b128"`` (the batch size)."""
    return f"b{size}"


def _make_forward(xnp: Any) -> Callable[[Any, Any], Any]:
    # A new function object each time: caches keyed on the function cannot hit.
    def forward(params: Any, x: Any) -> Any:
        for w, b in params[:-1]:
            x = xnp.tanh(x @ w + b)
        w, b = params[-1]
        return x @ w + b

    return forward


def setup(variant: str, size: int) -> Callable[[], dict[str, float]]:
    """Return one self-timed repetition (``phase -> seconds``) for ``variant`` at batch ``size``."""
    b = backends.load(variant)
    rng = np.random.default_rng(0)
    params = []
    for n_in, n_out in zip(LAYERS[:-1], LAYERS[1:]):
        w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        params.append((b.asarray(w), b.asarray(np.zeros((n_out,), np.float32))))
    x = b.asarray(rng.standard_normal((size, LAYERS[0])).astype(np.float32))
    jit = b.jit
    if jit is None:
        raise NotImplementedError(f"{variant} has no jit")

    # Both libraries reuse executables of identical modules: start every repetition cold so that
    # the compile phases measure a real XLA compile.
    clear = None
    if variant == "fluxion":
        from fluxion.backend import dispatch
        clear = dispatch.clear_caches
    elif variant == "jax":
        clear = b.module.clear_caches  # jax also reuses executables of identical modules

    def run() -> dict[str, float]:
        if clear is not None:
            clear()
        t0 = time.perf_counter()
        lowered = jit(_make_forward(b.np)).lower(params, x)
        t1, c1 = time.perf_counter(), time.process_time()
        lowered.compile()
        t2, c2 = time.perf_counter(), time.process_time()
        if clear is not None:
            clear()
        t2b, c2b = time.perf_counter(), time.process_time()
        jit(_make_forward(b.np))(params, x).block_until_ready()
        t3, c3 = time.perf_counter(), time.process_time()
        return {"trace_lower": t1 - t0, "compile": t2 - t1, "first_call": t3 - t2b,
                "compile_cpu": c2 - c1, "first_call_cpu": c3 - c2b}

    return run
