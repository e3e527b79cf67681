"""A recurrent network as ``lax.scan``: steady-state call and the compile path, split in phases.

The cell is ``h = tanh(h @ W + x_t @ U + b)`` with hidden size 64, input size 64, batch 8,
float32, scanned over ``T`` steps (1000; quick 100); the jitted function returns the last state
and the stacked states ``(T, 8, 64)``.

``step``         a cached call of the jitted scan, blocked (mean of 10 calls).
``trace_lower``  ``jit(f).lower(...)`` of a fresh function (cold caches): trace + StableHLO.
``compile``      ``lowered.compile()`` of that module: the XLA compile.
``first_call``   a second fresh ``jit(f)`` called once and blocked with cold caches: trace, lower,
                 compile and run.

The ``numpy`` variant is the same recurrence as a Python loop (``step`` only).
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES",
           "VARIANT_PHASES", "DEFAULT_REPS", "QUICK_REPS", "HIDDEN", "BATCH", "setup",
           "size_label", "make_inputs", "make_rnn", "check_tolerance"]

NAME = "scan_rnn"
DESCRIPTION = ("lax.scan of a tanh RNN cell (hidden 64, batch 8, float32) over T steps, jitted: "
               "cached step, trace+lower / compile / first call (cold caches); numpy loop")
VARIANTS = ("numpy", "jax", "fluxion")
SIZES = (1000,)
QUICK_SIZES = (100,)
PHASES = ("step", "trace_lower", "compile", "first_call")
VARIANT_PHASES = {"numpy": ("step",)}
DEFAULT_REPS = 10
QUICK_REPS = 3
HIDDEN = 64
BATCH = 8
_STEP_CALLS = 10


def size_label(size: int) -> str:
    """``1000 -> "T1000"`` (the number of scanned steps)."""
    return f"T{size}"


def make_inputs(steps: int) -> tuple[np.ndarray, ...]:
    """``(W, U, b, h0, xs)`` as float32 NumPy arrays; ``xs`` has shape ``(steps, 8, 64)``."""
    rng = np.random.default_rng(0)
    scale = 1.0 / np.sqrt(HIDDEN)
    w = (rng.standard_normal((HIDDEN, HIDDEN)) * scale).astype(np.float32)
    u = (rng.standard_normal((HIDDEN, HIDDEN)) * scale).astype(np.float32)
    b = (0.1 * rng.standard_normal((HIDDEN,))).astype(np.float32)
    h0 = np.zeros((BATCH, HIDDEN), np.float32)
    xs = rng.standard_normal((steps, BATCH, HIDDEN)).astype(np.float32)
    return w, u, b, h0, xs


def make_rnn(xnp: Any, lax: Any) -> Callable[..., Any]:
    """A fresh ``rnn(W, U, b, h0, xs) -> (h_T, hs)`` over ``xnp``/``lax`` (so no cache keyed on
    the function can hit)."""
    def rnn(w: Any, u: Any, b: Any, h0: Any, xs: Any) -> Any:
        def cell(h: Any, x: Any) -> Any:
            h = xnp.tanh(h @ w + x @ u + b)
            return h, h

        return lax.scan(cell, h0, xs)

    return rnn


def _numpy_rnn(w: np.ndarray, u: np.ndarray, b: np.ndarray, h0: np.ndarray,
               xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hs = np.empty((xs.shape[0],) + h0.shape, h0.dtype)
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t] @ u + b)
        hs[t] = h
    return h, hs


def check_tolerance(platform: str) -> float:
    """``rtol``/``atol`` of the check against the NumPy loop on ``platform``: 1e-4 on CPUs and
    GPUs; 2e-2 on a TPU, whose float32 matmuls at default precision use bfloat16 passes (about
    three digits, as jax's own test suite allows there).

    Example:
        >>> check_tolerance("cpu"), check_tolerance("tpu")
        (0.0001, 0.02)
    """
    return 2e-2 if platform == "tpu" else 1e-4


def setup(variant: str, size: int) -> Callable[[], Any]:
    """One repetition of ``variant`` at ``size`` steps (self-timed ``phase -> seconds`` for the
    jit backends, a plain call for numpy)."""
    host = make_inputs(size)
    if variant == "numpy":
        return lambda: _numpy_rnn(*host)
    b = backends.load(variant)
    lax = importlib.import_module(variant + ".lax")
    args = [b.asarray(a) for a in host]
    jit, block = b.jit, b.module.block_until_ready
    step = jit(make_rnn(b.np, lax))
    h_last, _ = block(step(*args))
    ref_h, _ = _numpy_rnn(*host)
    tol = check_tolerance(b.module.default_backend())
    err = float(np.max(np.abs(np.asarray(h_last) - ref_h)))
    if not np.allclose(np.asarray(h_last), ref_h, rtol=tol, atol=tol):
        raise AssertionError(f"{variant} scan_rnn differs from the NumPy loop: max abs "
                             f"difference {err:.2e}, tolerance {tol:.0e}")

    # Both libraries reuse executables of identical modules: clear them so that the compile
    # phases measure a real XLA compile.
    if variant == "fluxion":
        from fluxion.backend import dispatch
        clear = dispatch.clear_caches
    else:
        clear = b.module.clear_caches

    def run() -> dict[str, float]:
        block(step(*args))  # re-warm the cached step after the previous repetition's clear
        t0 = time.perf_counter()
        for _ in range(_STEP_CALLS):
            out = step(*args)
        block(out)
        t1 = time.perf_counter()
        clear()
        t2 = time.perf_counter()
        lowered = jit(make_rnn(b.np, lax)).lower(*args)
        t3 = time.perf_counter()
        lowered.compile()
        t4 = time.perf_counter()
        clear()
        t5 = time.perf_counter()
        block(jit(make_rnn(b.np, lax))(*args))
        t6 = time.perf_counter()
        return {"step": (t1 - t0) / _STEP_CALLS, "trace_lower": t3 - t2, "compile": t4 - t3,
                "first_call": t6 - t5}

    return run
