"""Tracing is thread-safe: each thread has its own current interpreter, as JAX's trace context.

Eight threads jit, grad and vmap different functions (and compositions of them, control flow and
eager ops) at the same time, many times, with a tiny thread switch interval so that their traces
interleave; every result is checked against values computed up front with NumPy.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import lax as flax
from fluxion.core import trace

N_THREADS = 8
ROUNDS = 12
X = np.linspace(-1.0, 1.0, 5).astype(np.float32)
XS = np.stack([X * (i + 1) for i in range(3)])


def _expected(k: int) -> dict[str, np.ndarray]:
    """What thread ``k``'s functions return, from their closed forms."""
    c = 1.0 / (k + 1)
    f = np.sin(X) * k + X * X * c
    df = np.cos(X) * k + 2 * X * c
    return {
        "jit": f,
        "eager": f,
        "grad": df,
        "jit_grad": df,
        "grad_jit": df,
        "vmap": (XS * XS).sum(1) * k,
        "vmap_jit": (XS * XS).sum(1) * k,
        "jit_vmap_grad": np.stack([np.cos(r) * k + 2 * r * c for r in XS]),
        "fori": X * (k + 3),
        "scan": X * (k + 2),
        "new_jit_per_call": f,
    }


def _run(k: int) -> dict[str, np.ndarray]:
    """Thread ``k``'s functions (different per thread) under every transformation."""
    c = 1.0 / (k + 1)

    def f(x):
        return fnp.sin(x) * k + x * x * c

    def f_sum(x):
        return f(x).sum()

    def sq(v):
        return fnp.dot(v, v) * k

    def body(i, acc):
        return acc + fnp.asarray(X)

    def step(carry, x):
        return carry + x, carry

    x, xs = fnp.asarray(X), fnp.asarray(XS)
    return {
        "jit": fluxion.jit(f)(x),
        "eager": f(x),
        "grad": fluxion.grad(f_sum)(x),
        "jit_grad": fluxion.jit(fluxion.grad(f_sum))(x),
        "grad_jit": fluxion.grad(fluxion.jit(f_sum))(x),
        "vmap": fluxion.vmap(sq)(xs),
        "vmap_jit": fluxion.vmap(fluxion.jit(sq))(xs),
        "jit_vmap_grad": fluxion.jit(fluxion.vmap(fluxion.grad(f_sum)))(xs),
        "fori": flax.fori_loop(0, k + 2, body, x),
        "scan": flax.scan(step, fnp.zeros(5), fnp.tile(x, (k + 1, 1)))[0] + x,
        "new_jit_per_call": fluxion.jit(lambda v: fnp.sin(v) * k + v * v * c)(x),
    }


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the threads' traces as finely as possible
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def test_threads_trace_concurrently(fast_switching):
    expected = {k: _expected(k) for k in range(N_THREADS)}
    failures: list[str] = []
    start = threading.Barrier(N_THREADS)

    def worker(k: int) -> None:
        try:
            start.wait()
            for r in range(ROUNDS):
                got = _run(k)
                for name, want in expected[k].items():
                    np.testing.assert_allclose(np.asarray(got[name]), want, rtol=2e-5, atol=2e-5,
                                               err_msg=f"thread {k} round {r}: {name}")
        except BaseException as e:
            failures.append(f"thread {k}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not failures, "\n".join(failures)


def test_new_thread_starts_outside_every_transformation():
    seen = {}

    def in_thread():
        seen["interp"] = trace.current()
        seen["value"] = np.asarray(fnp.arange(3.0) * 2)

    def f(x):
        t = threading.Thread(target=in_thread)
        t.start()
        t.join()
        seen["outer"] = trace.current()
        return x + 1

    fluxion.jit(f)(fnp.ones(2))
    assert seen["interp"] is trace.EVAL
    assert seen["outer"] is not trace.EVAL
    np.testing.assert_array_equal(seen["value"], [0.0, 2.0, 4.0])


def test_tracer_from_another_thread_is_rejected():
    leaked = {}

    def f(x):
        leaked["t"] = x
        done.wait()
        return x

    done = threading.Event()
    t = threading.Thread(target=lambda: fluxion.jit(f)(fnp.ones(2)))
    t.start()
    while "t" not in leaked:
        threading.Event().wait(0.001)
    try:
        with pytest.raises(fluxion.errors.UnexpectedTracerError, match="still running"):
            fnp.sin(leaked["t"])
    finally:
        done.set()
        t.join()
