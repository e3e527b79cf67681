"""Gradient of an MLP loss: the jitted training step, its first call, and eager (un-jitted) grad.

MLP 784-512-512-10 with tanh hidden layers, squared-error loss, batch 128, float32.

``jit_step``     a cached call of ``jit(grad(loss))``, blocked (10 calls, one wait for the last).
``jit_step_cpu`` those 10 calls' process CPU seconds (all threads) per call. One repetition is
                 one 10-call window (~30 ms) per worker process, timed on the wall; on a shared
                 machine two such windows in two processes see different loads. Measured
                 2026-12-07 (load 4-5, 2 cores): the worker's jit_step read 1.10x [1.07-1.14] jax
                 over 3 rounds, while six fresh processes per library running this same
                 sequence (4 windows each) gave process CPU per call 1.000x (pairs 0.985-1.008)
                 and wall 0.98x, and both libraries in one process 1.03x wall / 1.00-1.04x CPU:
                 the same optimized HLO and XLA kernels, the same CPU per call; the 1.10x was
                 the windows' loads. This phase puts the CPU figure in every run.
``eager_grad``   ``grad(loss)`` without jit, op by op, blocked.
``first_call``   trace + lower + compile + run of a fresh ``jit(grad(loss))`` (cold caches), in
                 this already warm process (after ``clear_caches``); ``first_call_cpu``: its
                 process CPU seconds (all threads).
``first_call_fresh``, ``first_call_fresh_cpu``
                 the same first call in a fresh interpreter (after the import and the arguments'
                 transfer, before anything else has run): wall and process CPU seconds. This also
                 pays the runtime's once-per-process start-up (thread pools, the matmul
                 library's kernel generation). CPU time is far less noisy on a loaded machine.
                 On a TPU (one process at a time may hold a chip) these fresh processes run in
                 ``setup`` before the worker opens the chip, ``QUICK_REPS`` of them, and the
                 repetitions take their figures in turn.
``first_call_fresh_trace_lower``, ``first_call_fresh_compile``, ``first_call_fresh_run``
                 that fresh first call split at XLA's compile: wall seconds up to it, in it, and
                 after it until the result is ready (the first execution, with the runtime's
                 once-per-process start-up).
``first_result_fresh``
                 in that fresh interpreter, the library's import, the arguments' transfer and the
                 first call together (wall). ``first_call_fresh`` alone compares unequal work
                 where one library compiles while it transfers the arguments: jax's
                 ``jnp.asarray`` of a NumPy array compiles a small program per shape, which on a
                 TPU pays the compiler's once-per-process start-up (~0.4 s) before the timed
                 call, while Fluxion's compiles nothing and pays it in the call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "PHASES", "DEFAULT_REPS", "QUICK_REPS",
           "setup", "size_label", "make_params", "make_loss", "first_call_in_this_process",
           "first_call_in_fresh_process", "one_process_per_device"]

NAME = "mlp_grad"
DESCRIPTION = "grad of an MLP 784-512-512-10 squared loss, batch 128: jitted step, eager, first call"
VARIANTS = ("jax", "fluxion")
SIZES = (128,)
PHASES = ("jit_step", "jit_step_cpu", "eager_grad", "first_call", "first_call_cpu", "first_call_fresh",
          "first_call_fresh_cpu", "first_result_fresh", "first_call_fresh_trace_lower",
          "first_call_fresh_compile", "first_call_fresh_run")
DEFAULT_REPS = 10
QUICK_REPS = 3
LAYERS = (784, 512, 512, 10)


def size_label(size: int) -> str:
    """``128 -> "b128"`` (the batch size)."""
    return f"b{size}"


def make_params(b: Any, rng: np.random.Generator) -> list:
    """The MLP's weights and biases as ``b`` arrays."""
    params = []
    for n_in, n_out in zip(LAYERS[:-1], LAYERS[1:]):
        w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        params.append((b.asarray(w), b.asarray(np.zeros((n_out,), np.float32))))
    return params


def make_loss(xnp: Any) -> Callable[[Any, Any, Any], Any]:
    """A fresh squared-error loss function over ``xnp`` (so no cache keyed on it can hit)."""
    def loss(params: Any, x: Any, y: Any) -> Any:
        for w, b in params[:-1]:
            x = xnp.tanh(x @ w + b)
        w, b = params[-1]
        return xnp.sum((x @ w + b - y) ** 2)
    return loss


def _inputs(b: Any, size: int) -> tuple:
    rng = np.random.default_rng(0)
    params = make_params(b, rng)
    x = b.asarray(rng.standard_normal((size, LAYERS[0])).astype(np.float32))
    y = b.asarray(rng.standard_normal((size, LAYERS[-1])).astype(np.float32))
    return params, x, y


def _compile_spans(variant: str) -> tuple[Any, Callable[[], None]]:
    """Wrap the library's one XLA-compile function (fluxion's ``compile_hook``, jax's
    ``jax._src.compiler``, both looked up as module attributes at every compile) to record
    ``(start, end)`` perf_counter pairs; returns the list and the function that unwraps it."""
    import importlib

    hook = importlib.import_module("fluxion.backend.compile_hook" if variant == "fluxion"
                                   else "jax._src.compiler")
    inner = hook.backend_compile_and_load
    spans: list[tuple[float, float]] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spans.append((t, time.perf_counter()))

    hook.backend_compile_and_load = timed

    def restore() -> None:
        hook.backend_compile_and_load = inner
    return spans, restore


def first_call_in_this_process(variant: str, size: int) -> dict[str, float]:
    """Time the first call of a fresh ``jit(grad(loss))`` (wall and CPU seconds) and, as
    ``total``, the library's import, the arguments' transfer and that call together; meant to
    run first thing in a fresh interpreter (see :func:`first_call_in_fresh_process`).

    The call's wall time is also split where XLA compiles: ``trace_lower`` (up to the first
    compile), ``compile`` (XLA's compiles) and ``run`` (after the last compile until the result
    is ready: the first execution, with the runtime's once-per-process start-up)."""
    start = time.perf_counter()
    b = backends.load(variant)
    params, x, y = _inputs(b, size)
    b.module.block_until_ready((params, x, y))
    step = b.jit(b.module.grad(make_loss(b.np)))
    spans, restore = _compile_spans(variant)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        b.module.block_until_ready(step(params, x, y))
        t1 = time.perf_counter()
        cpu = time.process_time() - c0
    finally:
        restore()
    compile_s = sum(e - s for s, e in spans)
    first, last = (spans[0][0], spans[-1][1]) if spans else (t1, t1)
    return {"wall": t1 - t0, "cpu": cpu, "total": t1 - start, "trace_lower": first - t0,
            "compile": compile_s, "run": t1 - last}


def first_call_in_fresh_process(variant: str, size: int, timeout: float = 600.0) -> dict[str, float]:
    """:func:`first_call_in_this_process` in a new interpreter with this process's environment
    (so the compilation-cache settings the runner chose apply)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import json, sys; sys.path.insert(0, %r); from benchmarks.workloads import mlp_grad; "
            "print(json.dumps(mlp_grad.first_call_in_this_process(%r, %d)))" % (root, variant, size))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"fresh-process first call of {variant} failed: "
                           f"{done.stderr.strip().splitlines()[-1:] or done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def one_process_per_device(variant: str) -> bool:
    """Whether ``variant`` will run on a TPU, which one process at a time may open: then a child
    process cannot use the device while this worker holds it. Read from the environment and the
    installed plugins, without opening any device."""
    value = os.environ.get("JAX_PLATFORMS", "")
    if variant == "fluxion":
        value = os.environ.get("FLUXION_PLATFORMS") or value
    first = value.split(",")[0].strip().lower()
    if first:
        return first == "tpu"
    import importlib.util
    try:
        return importlib.util.find_spec("libtpu") is not None
    except (ImportError, ValueError):
        return False


def setup(variant: str, size: int) -> Callable[[], dict[str, float]]:
    """One self-timed repetition (``phase -> seconds``) for ``variant`` at batch ``size``."""
    b = backends.load(variant)
    # On a TPU the fresh processes must run before this one opens the chip.
    early = ([first_call_in_fresh_process(variant, size) for _ in range(QUICK_REPS)]
             if one_process_per_device(variant) else None)
    params, x, y = _inputs(b, size)
    grad, jit = b.module.grad, b.jit
    step = jit(grad(make_loss(b.np)))
    b.module.block_until_ready(step(params, x, y))
    eager = grad(make_loss(b.np))
    b.module.block_until_ready(eager(params, x, y))
    clear = None
    if variant == "fluxion":
        from fluxion.backend import dispatch
        clear = dispatch.clear_caches
    elif variant == "jax":
        clear = b.module.clear_caches  # jax also reuses executables of identical modules

    def run() -> dict[str, float]:
        if clear is not None:
            clear()
        t0, c0 = time.perf_counter(), time.process_time()
        b.module.block_until_ready(jit(grad(make_loss(b.np)))(params, x, y))
        t1, c1 = time.perf_counter(), time.process_time()
        b.module.block_until_ready(eager(params, x, y))  # re-warm the per-op caches cleared above
        b.module.block_until_ready(step(params, x, y))  # and the jitted step's dispatch caches
        t2 = time.perf_counter()
        b.module.block_until_ready(eager(params, x, y))
        t3, c3 = time.perf_counter(), time.process_time()
        for _ in range(10):
            out = step(params, x, y)
        b.module.block_until_ready(out)
        t4, c4 = time.perf_counter(), time.process_time()
        if early is None:
            fresh = first_call_in_fresh_process(variant, size)
        else:
            fresh = early[0]
            early.append(early.pop(0))
        return {"first_call": t1 - t0, "first_call_cpu": c1 - c0, "eager_grad": t3 - t2,
                "jit_step": (t4 - t3) / 10, "jit_step_cpu": (c4 - c3) / 10,
                "first_call_fresh": fresh["wall"], "first_call_fresh_cpu": fresh["cpu"],
                "first_result_fresh": fresh["total"],
                "first_call_fresh_trace_lower": fresh["trace_lower"],
                "first_call_fresh_compile": fresh["compile"],
                "first_call_fresh_run": fresh["run"]}

    return run
