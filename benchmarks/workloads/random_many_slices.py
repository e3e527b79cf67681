"""One random draw read through many slices: the first-call cost of a fused PRNG hash.

``bernoulli(key, 0.5, (64, 784))`` is drawn once and read through ``SIZE`` different
slices+transposes (the shape of a VAE's evaluation with dropout-like masks). When the threefry
hash is lowered as straight-line code, XLA's CPU fusion copies the whole 20-round hash into every
consumer fusion, and compile time grows with the number of slices; lowered as a loop (a fusion
barrier) the hash is computed once. Phases: ``first_call`` (trace + lower + compile + run, a fresh
function each repetition) and ``steady`` (the compiled call: after 3 warm-up calls, the best of 5
blocks of 10 calls, each block blocked once at its end).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES", "DEFAULT_REPS",
           "QUICK_REPS", "setup", "size_label"]

NAME = "random_many_slices"
DESCRIPTION = "one bernoulli(64x784) draw read through N slices: first call and steady call"
VARIANTS = ("jax", "fluxion")
SIZES = (25, 100)
QUICK_SIZES = (25,)
PHASES = ("first_call", "steady")
DEFAULT_REPS = 3
QUICK_REPS = 2


def size_label(size: int) -> str:
    """``100 -> "100 slices"``."""
    return f"{size} slices"


def _make(b: Any, n: int, salt: int) -> Callable[[Any, Any], Any]:
    jnp, random = b.np, b.module.random

    def f(key: Any, x: Any) -> Any:
        # The width differs per repetition (784 + salt): the program differs, so no in-memory
        # executable cache keyed on the module text can turn a "first call" into a cache hit.
        mask = random.bernoulli(key, 0.5, (64, 784 + salt))
        total = 0.0
        for i in range(n):
            r = i % 64
            total = total + jnp.sum(jnp.where(mask[r, i:i + 300], x[r, i:i + 300], 0.0).T)
        return total

    return f


def setup(variant: str, size: int) -> Callable[[], dict[str, float]]:
    """Return one self-timed repetition (``phase -> seconds``)."""
    b = backends.load(variant)
    key = b.module.random.PRNGKey(0)

    salt = [0]

    def run() -> dict[str, float]:
        salt[0] += 1
        f = b.jit(_make(b, size, salt[0]))
        x = b.asarray(np.ones((64, 784 + salt[0]), np.float32))
        t0 = time.perf_counter()
        f(key, x).block_until_ready()
        t1 = time.perf_counter()
        for _ in range(3):               # warm-up: the first calls after a compile are noisy
            f(key, x).block_until_ready()
        block = 10
        steady = float("inf")
        for _ in range(5):
            t2 = time.perf_counter()
            for _ in range(block):
                out = f(key, x)
            out.block_until_ready()
            steady = min(steady, (time.perf_counter() - t2) / block)
        return {"first_call": t1 - t0, "steady": steady}

    return run
