"""Cases and helpers shared by the fluxion.lax tests in this folder (dtypes, tolerances, value
domains, and the eager/jit/JAX comparison ``_both``).

Import with ``from _lax_cases import ...`` (conftest.py puts this folder on sys.path).
"""

from __future__ import annotations

import jax.lax as jlax
import ml_dtypes
import numpy as np
from _compare import assert_same, rand_array

import fluxion
import fluxion.lax as flax

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, I32, U8, BOOL, C64 = (np.dtype(t) for t in ("float32", "float16", "int32", "uint8",
                                                      "bool", "complex64"))
DTYPES = [F32, F16, BF16, I32, U8, BOOL, C64]
# dtypes on which sweeps also run under jit (the rest run eagerly only, to bound compile count)
JIT_DTYPES = {F32, I32, C64}
SHAPE = (2, 3)


def _values(domain: str, shape: tuple, dtype: np.dtype, seed: int = 0) -> np.ndarray:
    if dtype.kind in "biu":
        return rand_array(shape, dtype, seed, positive=domain in ("pos", "ge1"))
    if domain == "unit":
        return rand_array(shape, dtype, seed, unit=True)
    if domain == "pos":
        return rand_array(shape, dtype, seed, positive=True)
    if domain == "ge1":
        return (rand_array(shape, dtype, seed, positive=True) + np.array(1, dtype)).astype(dtype)
    if domain == "small":
        return (rand_array(shape, dtype, seed) / np.array(2, dtype)).astype(dtype)
    return rand_array(shape, dtype, seed)


def _tol(dtype: np.dtype) -> dict:
    if dtype in (F16, BF16):
        return {"rtol": 1e-2, "atol": 1e-2}
    if dtype in (np.dtype("float64"), np.dtype("complex128")):
        return {"rtol": 1e-12, "atol": 1e-12}
    return {"rtol": 1e-5, "atol": 1e-6}


def _ops(name: str):
    return getattr(flax, name), getattr(jlax, name)


def _both(ours_fn, jax_fn, *args, rtol=None, atol=None, check_weak_type=True):
    """ours eager == ours jitted == jax (values, dtype, shape, weak type)."""
    theirs = jax_fn(*args)
    eager = ours_fn(*args)
    assert_same(eager, theirs, rtol=rtol, atol=atol, check_weak_type=check_weak_type)
    jitted = fluxion.jit(ours_fn)(*args)
    assert_same(jitted, theirs, rtol=rtol, atol=atol, check_weak_type=check_weak_type)


X = rand_array((3, 4), "float32", seed=1)
XI = rand_array((3, 4), "int32", seed=2)
