"""fluxion.lax shape ops (iota, broadcast, reshape, transpose, squeeze, expand_dims, slice, rev,
concatenate) against jax.lax 0.10.2.

Each case runs eagerly and under ``fluxion.jit``; values, dtypes, shapes and weak types must equal
JAX's, and error cases must raise JAX's exception class with a message naming the function.
"""

from __future__ import annotations

import jax.lax as jlax
import numpy as np
import pytest
from _compare import assert_same, check_like_jax, rand_array
from _lax_cases import BF16, BOOL, F32, I32, JIT_DTYPES

import fluxion
import fluxion.lax as flax


@pytest.mark.parametrize("dtype", [F32, I32, BOOL, BF16], ids=lambda d: d.name)
def test_iota(dtype):
    check_like_jax(lambda: flax.iota(dtype, 5), lambda: jlax.iota(dtype, 5))
    for dim in (0, 1):
        check_like_jax(lambda: flax.broadcasted_iota(dtype, (2, 3), dim),
                       lambda: jlax.broadcasted_iota(dtype, (2, 3), dim))
    check_like_jax(fluxion.jit(lambda: flax.iota(dtype, 5)), lambda: jlax.iota(dtype, 5))


def test_iota_errors():
    check_like_jax(lambda: flax.broadcasted_iota(F32, (2, 3), 2),
                   lambda: jlax.broadcasted_iota(F32, (2, 3), 2), err_contains=("iota",))
    check_like_jax(lambda: flax.iota(F32, -1), lambda: jlax.iota(F32, -1))


SHAPE_CASES = [
    ("broadcast_in_dim", (3,), ((2, 3), (1,))),
    ("broadcast_in_dim", (3,), ((3, 2), (0,))),
    ("broadcast_in_dim", (), ((2, 3), ())),
    ("broadcast_in_dim", (1, 3), ((2, 3), (0, 1))),
    ("broadcast_in_dim", (2, 3), ((2, 4, 3), (0, 2))),
    ("broadcast", (2, 3), ((4,),)),
    ("broadcast", (), ((2, 3),)),
    ("reshape", (2, 3), ((3, 2),)),
    ("reshape", (2, 3), ((6,),)),
    ("reshape", (2, 3), ((6,), (1, 0))),
    ("reshape", (1,), ((),)),
    ("reshape", (), ((1, 1),)),
    ("transpose", (2, 3), ((1, 0),)),
    ("transpose", (2, 3, 4), ((2, 0, 1),)),
    ("transpose", (), ((),)),
    ("squeeze", (1, 3, 1), ((0, 2),)),
    ("squeeze", (1, 3, 1), ((-1,),)),
    ("squeeze", (1,), ((0,),)),
    ("expand_dims", (2, 3), ((0,),)),
    ("expand_dims", (2, 3), ((0, 3),)),
    ("expand_dims", (), ((0,),)),
    ("expand_dims", (2, 3), ((-1,),)),
    ("slice", (5,), ((1,), (4,))),
    ("slice", (4, 5), ((0, 1), (4, 5), (2, 2))),
    ("slice", (4, 5), ((1, 0), (1, 5))),
    ("slice_in_dim", (4, 5), (1, 3, 1, 1)),
    ("slice_in_dim", (4, 5), (None, None, 2, 0)),
    ("slice_in_dim", (4, 5), (-3, None, 1, -1)),
    ("index_in_dim", (4, 5), (2, 0, True)),
    ("index_in_dim", (4, 5), (-1, 1, False)),
    ("rev", (2, 3), ((0,),)),
    ("rev", (2, 3), ((0, 1),)),
    ("rev", (2, 3), ((),)),
]


@pytest.mark.parametrize("dtype", [F32, I32, BOOL, BF16], ids=lambda d: d.name)
@pytest.mark.parametrize("case", SHAPE_CASES, ids=lambda c: f"{c[0]}{c[1]}{c[2]}")
def test_shape_ops(case, dtype):
    name, shape, params = case
    x = rand_array(shape, dtype, 1)
    f = lambda v: getattr(flax, name)(v, *params)
    g = lambda v: getattr(jlax, name)(v, *params)
    check_like_jax(f, g, x)
    if dtype in JIT_DTYPES:
        check_like_jax(fluxion.jit(f), g, x)


@pytest.mark.parametrize("name", ["broadcast_in_dim", "reshape", "transpose", "squeeze",
                                  "expand_dims", "rev", "slice_in_dim"])
def test_shape_ops_weak_scalar(name):
    params = {"broadcast_in_dim": ((2,), ()), "reshape": ((1,),), "transpose": ((),),
              "squeeze": ((),), "expand_dims": ((0,),), "rev": ((),)}
    if name == "slice_in_dim":
        x = flax.broadcast_in_dim(1.0, (3,), ())
        jx = jlax.broadcast_in_dim(1.0, (3,), ())
        assert_same(x, jx)
        assert_same(flax.slice_in_dim(x, 0, 2), jlax.slice_in_dim(jx, 0, 2))
        return
    check_like_jax(lambda v: getattr(flax, name)(v, *params[name]),
                   lambda v: getattr(jlax, name)(v, *params[name]), 2.0)


SHAPE_ERRORS = [
    ("reshape", (2, 3), ((6,), (0,))),
    ("transpose", (2, 3), ((0, 0),)),
    ("transpose", (2, 3), ((0,),)),
    ("squeeze", (2, 3), ((0,),)),
    ("squeeze", (2, 3), ((2,),)),
    ("broadcast_in_dim", (3,), ((2, 4), (1,))),
    ("broadcast_in_dim", (3,), ((2, 3), (0, 1))),
    ("broadcast_in_dim", (2, 3), ((3,), (0,))),
    ("expand_dims", (2, 3), ((4,),)),
    ("rev", (2, 3), ((2,),)),
    ("rev", (2, 3), ((0, 0),)),
]


def test_shape_op_errors_jax_agnostic():
    # JAX itself fails late (a verifier error or an internal ValueError) on these; we raise a
    # TypeError naming lax.slice and the shapes at once.
    x = np.ones((5,), np.float32)
    for start, limit in (((1,), (6,)), ((3,), (2,)), ((0, 0), (1, 1))):
        with pytest.raises(TypeError, match=r"lax\.slice.*\(5,\).*test_shape_ops\.py"):
            flax.slice(x, start, limit)
        with pytest.raises(TypeError, match="slice"):
            fluxion.jit(lambda v: flax.slice(v, start, limit))(x)
    with pytest.raises(TypeError, match=r"lax\.reshape.*\(2, 3\).*\(4,\)"):
        flax.reshape(np.ones((2, 3), np.float32), (4,))


@pytest.mark.parametrize("case", SHAPE_ERRORS, ids=lambda c: f"{c[0]}{c[1]}{c[2]}")
def test_shape_op_errors(case):
    name, shape, params = case
    x = np.ones(shape, np.float32)
    e = check_like_jax(lambda v: getattr(flax, name)(v, *params),
                       lambda v: getattr(jlax, name)(v, *params), x, err_contains=(name,))
    assert isinstance(e, Exception), f"jax accepted {case}"


@pytest.mark.parametrize("dtype", [F32, I32, BOOL, BF16], ids=lambda d: d.name)
def test_concatenate(dtype):
    a, b, c = rand_array((2, 3), dtype, 1), rand_array((1, 3), dtype, 2), rand_array((0, 3), dtype)
    check_like_jax(lambda *v: flax.concatenate(v, 0), lambda *v: jlax.concatenate(v, 0), a, b, c)
    check_like_jax(lambda *v: flax.concatenate(v, 1), lambda *v: jlax.concatenate(v, 1), a, a)
    check_like_jax(lambda *v: flax.concatenate(v, 0), lambda *v: jlax.concatenate(v, 0), a)
    check_like_jax(fluxion.jit(lambda *v: flax.concatenate(v, 0)),
                   lambda *v: jlax.concatenate(v, 0), a, b)


def test_concatenate_errors():
    a, b = np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)
    e = check_like_jax(lambda *v: flax.concatenate(v, 0), lambda *v: jlax.concatenate(v, 0), a, b,
                       err_contains=("concatenate",))
    assert isinstance(e, TypeError) and "(2, 3)" in str(e) and "(2, 4)" in str(e)
    check_like_jax(lambda *v: flax.concatenate(v, 0), lambda *v: jlax.concatenate(v, 0),
                   a, a.astype(np.int32), err_contains=("concatenate",))
    check_like_jax(lambda *v: flax.concatenate(v, 2), lambda *v: jlax.concatenate(v, 2), a, a,
                   err_contains=("concatenate",))
    check_like_jax(lambda: flax.concatenate([], 0), lambda: jlax.concatenate([], 0))


def test_concatenate_weak():
    check_like_jax(lambda: flax.concatenate([flax.broadcast(1.0, (2,)), flax.broadcast(2.0, (1,))],
                                            0),
                   lambda: jlax.concatenate([jlax.broadcast(1.0, (2,)), jlax.broadcast(2.0, (1,))],
                                            0))
