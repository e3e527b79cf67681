"""jaxlib queues the Python objects it releases without the GIL (each execution's and each
readiness query's traceback) until someone frees the queue; jax's C++ jit does at every call,
and Fluxion's dispatch paths must too, or a loop of cached calls grows without bound (before
the fix: ~70-130 bytes per call on every path here, ~60 MB per million calls)."""

import tracemalloc

import numpy as np

import fluxion
import fluxion.numpy as jnp


def _blocks_kept(call, n: int = 3000) -> int:
    """Python memory blocks allocated during ``n`` calls and still alive after them (after as
    many calls first, which fill Python's free lists; blocks of background threads, such as
    the compilation cache's, left out)."""
    for _ in range(n):
        call()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(n):
            call()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    mine = [tracemalloc.Filter(False, "*threading.py"),
            tracemalloc.Filter(False, "*compile_cache.py")]
    after, before = after.filter_traces(mine), before.filter_traces(mine)
    return sum(st.count_diff for st in after.compare_to(before, "filename"))


def test_cached_calls_free_what_jaxlib_queues():
    x = jnp.asarray(np.float32(1.0))
    v = jnp.asarray(np.ones(3, np.float32))
    one = fluxion.jit(lambda t: t + 1)
    two = fluxion.jit(lambda a, b: (a + b, a * b))
    star = fluxion.jit(lambda *a: a[0] * 2.0)
    grad = fluxion.jit(fluxion.grad(lambda t: jnp.tanh(t)))
    tree = fluxion.jit(lambda p: p["a"] + p["b"])
    paths = {
        "one argument, one output": lambda: one(x),
        "two outputs": lambda: two(x, x),
        "*args, two arguments": lambda: star(x, x),
        "a Python float in, read as a float": lambda: float(grad(1.0)),
        "a pytree argument": lambda: tree({"a": x, "b": x}),
        "eager binary op": lambda: v + v,
        "eager unary op": lambda: jnp.sin(v),
        "jit call, then block": lambda: one(x).block_until_ready(),
    }
    # each path kept one block per call before (3000); what is left now is the snapshots' own
    kept = {name: _blocks_kept(call) for name, call in paths.items()}
    assert all(k < 300 for k in kept.values()), kept
