"""fluxion.numpy.reductions against jax.numpy: sum/prod/max/min/mean/var/std/ptp/any/all and
argmax/argmin with axis, keepdims, where, dtype and initial.
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from _compare import check_like_jax, rand_array

import fluxion.numpy as fnp

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, I32, U8, BOOL, C64, I8 = (np.dtype(t) for t in (
    "float32", "float16", "int32", "uint8", "bool", "complex64", "int8"))


def both(name: str, *args, rtol=None, atol=None, err_contains=(), **kwargs):
    """Call fnp.<name> and jnp.<name> with the same arguments and compare."""
    return check_like_jax(getattr(fnp, name), getattr(jnp, name), *args, rtol=rtol, atol=atol,
                          err_contains=err_contains, **kwargs)


def _tol(dt):
    dt = np.dtype(dt)
    if dt in (F16, BF16):
        return {"rtol": 2e-2, "atol": 2e-2}
    return {"rtol": 2e-6, "atol": 2e-6}


RED_X = rand_array((2, 3, 4), F32, 7)
RED_KW = [{}, {"axis": 0}, {"axis": 1}, {"axis": -1}, {"axis": (0, 2)}, {"axis": None},
          {"axis": 1, "keepdims": True}, {"keepdims": True}, {"axis": ()}]


@pytest.mark.parametrize("kw", RED_KW, ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any",
                                  "amax", "amin"])
def test_reductions(name, kw):
    both(name, RED_X, rtol=1e-5, atol=1e-6, **kw)


@pytest.mark.parametrize("dtype", [I32, BOOL, BF16, F16, U8, C64], ids=lambda d: d.name)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any"])
def test_reductions_dtypes(name, dtype):
    x = rand_array((2, 3), dtype, 3)
    tol = _tol(dtype) if dtype.kind in "fcV" or dtype == BF16 or name in ("mean", "var", "std") \
        else {}
    check_like_jax(getattr(fnp, name), getattr(jnp, name), x, err_contains=(name,), **tol)
    check_like_jax(getattr(fnp, name), getattr(jnp, name), x, axis=1, **tol)


def test_reductions_options():
    x = RED_X
    where = rand_array((2, 3, 4), BOOL, 9)
    both("sum", x, where=where, rtol=1e-6)
    both("sum", x, axis=1, where=where, rtol=1e-6)
    both("max", x, axis=1, where=where, initial=-10.0)
    both("min", x, where=where, initial=10.0)
    both("mean", x, axis=0, where=where, rtol=1e-6)
    both("sum", x, dtype=F16, rtol=1e-2)
    both("sum", rand_array((2, 3), I8, 1), dtype=I32)
    both("sum", rand_array((2, 3), U8, 1))
    both("sum", rand_array((2, 3), BOOL, 1))
    both("sum", x, axis=1, initial=5.0, rtol=1e-6)
    both("prod", x, axis=2, initial=2.0, rtol=1e-6)
    both("mean", rand_array((2, 3), I32, 1), rtol=1e-6)
    both("mean", x, dtype=F16, rtol=1e-2)
    both("var", x, axis=1, ddof=1, rtol=1e-5)
    both("std", x, ddof=1, keepdims=True, rtol=1e-5)
    both("max", np.ones((0, 3), np.float32), axis=0)
    check_like_jax(fnp.max, jnp.max, np.ones((0, 3), np.float32))
    check_like_jax(fnp.sum, jnp.sum, x, axis=3)
    both("sum", 3.0)
    both("sum", [1, 2, 3])
    both("mean", 2, rtol=1e-6)


def test_reductions_nan():
    x = np.array([[1.0, np.nan, 3.0], [0.5, 2.0, -1.0]], np.float32)
    for name in ("sum", "max", "min", "mean", "argmax", "argmin"):
        both(name, x)
        both(name, x, axis=1)
        both(name, x, axis=0)


@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": 1}, {"axis": -1}, {"keepdims": True},
                                {"axis": 1, "keepdims": True}], ids=str)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name, kw):
    x = np.array([[1, 5, 5, 0], [3, 3, -1, 7], [2, 2, 2, 2]], np.float32)
    both(name, x, **kw)
    both(name, x.astype(np.int32), **kw)
    both(name, x > 2, **kw)


def test_argmax_errors():
    check_like_jax(fnp.argmax, jnp.argmax, np.ones((0,), np.float32))
    with pytest.raises((ValueError, IndexError), match="argmax"):  # JAX: a bare IndexError
        fnp.argmax(np.ones((2, 3), np.float32), axis=2)
