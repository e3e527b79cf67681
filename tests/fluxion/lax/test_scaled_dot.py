"""``lax.scaled_dot`` against jax 0.10.2: block-scaled float8 (e4m3fn values, e8m0fnu scales)
and float32 operands, default and given dimension numbers and result types, eager and jit
(values bit-equal, dtypes, shapes), vmap with an unbatched scale, jax's shape errors, and no
derivative (as jax)."""

from __future__ import annotations

import os

import jax
import ml_dtypes
import numpy as np
import pytest
from _compare import assert_same

import fluxion
from fluxion import lax

_RNG = np.random.default_rng(0)
ON_CPU = os.environ.get("FLUXION_TEST_PLATFORM", "cpu") == "cpu"
F8, E8 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu


def _arr(shape, dtype=np.float32, positive=False):
    x = _RNG.normal(size=shape).astype(np.float32)
    return (np.abs(x) if positive else x).astype(dtype)


CASES = {  # name: (lhs, rhs, keyword arguments)
    "f8_2d": (_arr((4, 64), F8), _arr((64, 8), F8),
              dict(lhs_scale=_arr((4, 2), E8, True), rhs_scale=_arr((2, 8), E8, True))),
    "f8_3d_f32": (_arr((2, 4, 64), F8), _arr((2, 64, 8), F8),
                  dict(lhs_scale=_arr((2, 4, 2), E8, True), rhs_scale=_arr((2, 2, 8), E8, True),
                       preferred_element_type=np.float32)),
    "f32_unit_scales": (_arr((4, 6)), _arr((6, 3)), {}),
    "f32_scales": (_arr((4, 6)), _arr((6, 3)),
                   dict(lhs_scale=_arr((4, 3)), rhs_scale=_arr((2, 3)),
                        preferred_element_type=np.float32)),
    "dimension_numbers": (_arr((6, 4)), _arr((3, 6)),
                          dict(dimension_numbers=(((0,), (1,)), ((), ())),
                               preferred_element_type=np.float32)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_scaled_dot_like_jax(name):
    lhs, rhs, kw = CASES[name]
    # bit-equal on the CPU; on a TPU within bfloat16's tolerance: the decomposition's products
    # are bfloat16, which the chip rounds otherwise (f32_scales: 1.6% apart on a v5e)
    tol = {} if ON_CPU else dict(rtol=2e-2, atol=2e-2)
    assert_same(lax.scaled_dot(lhs, rhs, **kw), jax.lax.scaled_dot(lhs, rhs, **kw), **tol)
    assert_same(fluxion.jit(lambda a, b: lax.scaled_dot(a, b, **kw))(lhs, rhs),
                jax.jit(lambda a, b: jax.lax.scaled_dot(a, b, **kw))(lhs, rhs), **tol)


def test_scaled_dot_vmap_like_jax():
    lhs, rhs, kw = CASES["f8_3d_f32"]

    def f(lib):
        return lib.vmap(lambda a, b, ls, rs: lib.lax.scaled_dot(
            a, b, lhs_scale=ls, rhs_scale=rs, preferred_element_type=np.float32),
            in_axes=(0, 0, 0, None))
    assert_same(f(fluxion)(lhs, rhs, kw["lhs_scale"], kw["rhs_scale"][0]),
                f(jax)(lhs, rhs, kw["lhs_scale"], kw["rhs_scale"][0]))


ERRORS = {  # name: (lhs, rhs, keyword arguments, message)
    "rank1": (_arr((6,)), _arr((6,)), {}, "does not support 0-rank and 1-rank operands"),
    "ratio": (_arr((4, 6)), _arr((6, 3)), dict(lhs_scale=_arr((4, 6))), "must be at least 2"),
    "divisible": (_arr((4, 6)), _arr((6, 3)), dict(lhs_scale=_arr((4, 4))),
                  "must be divisible by its scale's dim size 4"),
    "free_dim": (_arr((4, 6)), _arr((6, 3)), dict(lhs_scale=_arr((5, 3))),
                 "LHS dim 0 of size 4 does not match scale dim size 5"),
    "rank": (_arr((4, 6)), _arr((6, 3)), dict(lhs_scale=_arr((4, 3, 1))),
             "All input tensors must have the same rank"),
    "contracting": (_arr((4, 6)), _arr((8, 3)), {},
                    "LHS contracting dim 1 of size 6 does not match RHS contracting dim 0"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_scaled_dot_errors_like_jax(name):
    lhs, rhs, kw, msg = ERRORS[name]
    for lib in (fluxion, jax):
        with pytest.raises(TypeError, match=msg):
            lib.lax.scaled_dot(lhs, rhs, **kw)


def test_scaled_dot_has_no_derivative_like_jax():
    for lib in (fluxion, jax):
        f = lib.grad(lambda a: lib.lax.scaled_dot(a, np.ones((6, 3), np.float32),
                                                  preferred_element_type=np.float32).sum())
        with pytest.raises(NotImplementedError, match="Differentiation rule for 'scaled_dot'"):
            f(np.ones((4, 6), np.float32))
