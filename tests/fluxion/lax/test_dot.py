"""fluxion.lax dot, dot_general and batch_matmul against jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax.lax as jlax
import numpy as np
import pytest
from _compare import check_like_jax, platform_tol, rand_array
from _lax_cases import BF16, BOOL, C64, F16, F32, I32, JIT_DTYPES, U8, _tol

import fluxion
import fluxion.lax as flax

DOT_CASES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((1, 3), (3, 1))]


@pytest.mark.parametrize("dtype", [F32, F16, BF16, I32, C64, BOOL, U8], ids=lambda d: d.name)
@pytest.mark.parametrize("shapes", DOT_CASES, ids=str)
def test_dot(shapes, dtype):
    a, b = rand_array(shapes[0], dtype, 1), rand_array(shapes[1], dtype, 2)
    tol = _tol(dtype) if dtype.kind in "fc" or dtype == BF16 else {}
    check_like_jax(flax.dot, jlax.dot, a, b, **tol)
    if dtype in JIT_DTYPES:
        check_like_jax(fluxion.jit(flax.dot), jlax.dot, a, b, **tol)


@pytest.mark.parametrize("case", [
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((2, 3, 4), (4, 2, 5), (((2,), (0,)), ((0,), (1,)))),
    ((3, 4), (5, 4), (((1,), (1,)), ((), ()))),
    ((3, 4), (5, 6), (((), ()), ((), ()))),
    ((2, 3, 4), (3, 2, 4), (((1, 2), (0, 2)), ((0,), (1,)))),
    ((), (), (((), ()), ((), ()))),
], ids=str)
def test_dot_general(case):
    ls, rs, dn = case
    a, b = rand_array(ls, F32, 1), rand_array(rs, F32, 2)
    check_like_jax(lambda x, y: flax.dot_general(x, y, dn), lambda x, y: jlax.dot_general(x, y, dn),
                   a, b, **_tol(F32))
    check_like_jax(fluxion.jit(lambda x, y: flax.dot_general(x, y, dn)),
                   lambda x, y: jlax.dot_general(x, y, dn), a, b, **_tol(F32))


@pytest.mark.parametrize("pair", [(np.dtype("int8"), I32), (BF16, F32), (F16, F32), (I32, F32),
                                  (F32, BF16)], ids=lambda p: f"{p[0].name}->{p[1].name}")
def test_dot_mixed_dtypes(pair):
    a, b = rand_array((2, 3), pair[0], 1), rand_array((3, 4), pair[1], 2)
    check_like_jax(flax.dot, jlax.dot, a, b, **_tol(F32))
    check_like_jax(flax.dot, jlax.dot, b.T, a.T, **_tol(F32))
    check_like_jax(fluxion.jit(flax.dot), jlax.dot, a, b, **_tol(F32))


@pytest.mark.parametrize("pair", [(np.dtype("int8"), I32), (BF16, F32), (F16, F32), (I32, F32),
                                  (F32, BF16)], ids=lambda p: f"{p[0].name}->{p[1].name}")
def test_dot_preferred_element_type(pair):
    src, pet = pair
    a, b = rand_array((2, 3), src, 1), rand_array((3, 4), src, 2)
    f = lambda x, y: flax.dot(x, y, preferred_element_type=pet)
    g = lambda x, y: jlax.dot(x, y, preferred_element_type=pet)
    check_like_jax(f, g, a, b, **_tol(pet))
    check_like_jax(fluxion.jit(f), g, a, b, **_tol(pet))


@pytest.mark.parametrize("precision", [None, "highest", jlax.Precision.HIGHEST, "default",
                                       ("highest", "highest")], ids=str)
def test_dot_precision(precision):
    a, b = rand_array((2, 3), F32, 1), rand_array((3, 4), F32, 2)
    fp = precision
    if isinstance(precision, jlax.Precision):
        fp = flax.Precision.HIGHEST
    # "default" asks for the platform's default: bf16 passes on a TPU (its bfloat16 tolerance
    # there; unchanged on the CPU)
    tol = platform_tol(**_tol(F32), dtype=BF16) if precision == "default" else _tol(F32)
    check_like_jax(lambda x, y: flax.dot(x, y, precision=fp),
                   lambda x, y: jlax.dot(x, y, precision=precision), a, b, **tol)


def test_dot_weak_and_batch_matmul():
    check_like_jax(flax.dot, jlax.dot, np.ones(3, np.float32), np.ones(3, np.float32))
    a, b = rand_array((2, 3, 4), F32, 1), rand_array((2, 4, 5), F32, 2)
    check_like_jax(flax.batch_matmul, jlax.batch_matmul, a, b, **_tol(F32))


@pytest.mark.parametrize("case", [
    ((3,), (4,), None), ((2, 3), (2, 3), None),
    ((2, 3, 4), (2, 4, 5), "dg_batch"), ((2, 3), (3, 4), "dg_range"),
], ids=str)
def test_dot_errors(case):
    ls, rs, kind = case
    a = np.ones(ls, np.float32)
    b = np.ones(rs, np.float32 if kind is not np.int32 else np.int32)
    if kind == "dg_batch":
        dn = (((2,), (1,)), ((0,), (1,)))
    elif kind == "dg_range":
        dn = (((2,), (0,)), ((), ()))
    else:
        dn = None
    if dn is None:
        e = check_like_jax(flax.dot, jlax.dot, a, b, err_contains=("dot",))
    else:
        e = check_like_jax(lambda x, y: flax.dot_general(x, y, dn),
                           lambda x, y: jlax.dot_general(x, y, dn), a, b,
                           err_contains=("dot_general",))
    assert isinstance(e, Exception)


@pytest.mark.parametrize("shapes", [((6,), (6,)), ((2, 3), (1, 3, 2))], ids=str)
def test_batch_matmul_rank_errors_are_value_errors_like_jax(shapes):
    a, b = (np.ones(s, np.float32) for s in shapes)
    e = check_like_jax(flax.batch_matmul, jlax.batch_matmul, a, b, err_contains=("batch_matmul",))
    assert isinstance(e, ValueError)
