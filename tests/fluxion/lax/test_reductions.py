"""fluxion.lax reductions (reduce_sum/prod/max/min/and/or/xor, argmax/argmin, generic reduce)
against jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax.lax as jlax
import numpy as np
import pytest
from _compare import check_like_jax, rand_array
from _lax_cases import BF16, DTYPES, JIT_DTYPES, SHAPE, XI, X, _both, _tol

import fluxion
import fluxion.lax as flax

REDUCE_AXES = [(), (0,), (1,), (0, 1)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min",
                                  "reduce_and", "reduce_or", "reduce_xor"])
def test_reductions(name, dtype):
    x = rand_array(SHAPE, dtype, 1)
    tol = _tol(dtype) if dtype.kind in "fc" or dtype == BF16 else {}
    for axes in REDUCE_AXES:
        f = lambda v, axes=axes: getattr(flax, name)(v, axes)
        g = lambda v, axes=axes: getattr(jlax, name)(v, axes)
        res = check_like_jax(f, g, x, err_contains=(name.removeprefix("reduce_"),), **tol)
        if isinstance(res, Exception):
            return
        if dtype in JIT_DTYPES:
            check_like_jax(fluxion.jit(f), g, x, **tol)


def test_reductions_special():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, 2.0, 0.0]], np.float32)
    for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        for axes in REDUCE_AXES:
            check_like_jax(lambda v: getattr(flax, name)(v, axes),
                           lambda v: getattr(jlax, name)(v, axes), x)
    empty = np.ones((0, 3), np.float32)
    for name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        check_like_jax(lambda v: getattr(flax, name)(v, (0,)),
                       lambda v: getattr(jlax, name)(v, (0,)), empty)
    check_like_jax(lambda v: flax.reduce_sum(v, ()), lambda v: jlax.reduce_sum(v, ()), 2.0)
    check_like_jax(lambda v: flax.reduce_max(v, (0,)), lambda v: jlax.reduce_max(v, (0,)),
                   np.ones((0,), np.int32))


def test_reduction_errors():
    x = np.ones(SHAPE, np.float32)
    check_like_jax(lambda v: flax.reduce_sum(v, (2,)), lambda v: jlax.reduce_sum(v, (2,)), x,
                   err_contains=("reduce_sum",))
    check_like_jax(lambda v: flax.reduce_sum(v, (0, 0)), lambda v: jlax.reduce_sum(v, (0, 0)), x)


ARG_INPUTS = [
    np.array([[1.0, 3.0, 3.0, np.nan], [np.nan, 2.0, np.nan, -1.0], [-np.inf] * 4], np.float32),
    np.array([[1, 5, 5, 0], [2, 2, 2, 2]], np.int32),
    np.array([[False, True, True], [False, False, False]]),
]


@pytest.mark.parametrize("which", ["argmax", "argmin"])
@pytest.mark.parametrize("idx", [0, 1, 2])
def test_argminmax(which, idx):
    x = ARG_INPUTS[idx]
    f, g = getattr(flax, which), getattr(jlax, which)
    for axis in (0, 1):
        _both(lambda a: f(a, axis, np.int32), lambda a: g(a, axis, np.int32), x)


def test_reduce():
    _both(lambda a: flax.reduce(a, 0.0, flax.add, (1,)), lambda a: jlax.reduce(a, 0.0, jlax.add, (1,)),
          X, rtol=1e-6)
    _both(lambda a: flax.reduce(a, -np.inf, flax.max, (0,)),
          lambda a: jlax.reduce(a, -np.inf, jlax.max, (0,)), X)
    _both(lambda a, b: flax.reduce((a, b), (0.0, 0), lambda x, y: (x[0] + y[0], flax.max(x[1], y[1])),
                                   (0,)),
          lambda a, b: jlax.reduce((a, b), (0.0, 0), lambda x, y: (x[0] + y[0], jlax.max(x[1], y[1])),
                                   (0,)), X, XI, rtol=1e-6)


def test_reduce_order_dependent_computation():
    # x * 2 + y is not associative: its result depends on the order XLA combines the elements in,
    # which is implementation-defined (sequential on the CPU, jax's reference; a tree on a TPU:
    # tests/conftest.py skips it there)
    _both(lambda a: flax.reduce(a, 0, lambda x, y: x * 2 + y, (1,)),
          lambda a: jlax.reduce(a, 0, lambda x, y: x * 2 + y, (1,)), XI)


def test_reduce_non_identity_init():
    # XLA applies an init value that is not the reduction's identity an implementation-defined
    # number of times: once on the CPU (jax's reference), once per partial reduction on a TPU
    # (tests/conftest.py skips it there)
    _both(lambda a: flax.reduce(a, 2.0, flax.add, (0, 1)),
          lambda a: jlax.reduce(a, 2.0, jlax.add, (0, 1)), X, rtol=1e-6)
