"""fluxion.numpy.products against jax.numpy: dot, matmul, tensordot, inner, outer, vdot.
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from _compare import check_like_jax, rand_array

import fluxion.numpy as fnp

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, F16, I32, BOOL, C64 = (np.dtype(t) for t in (
    "float32", "float16", "int32", "bool", "complex64"))


def both(name: str, *args, rtol=None, atol=None, err_contains=(), **kwargs):
    """Call fnp.<name> and jnp.<name> with the same arguments and compare."""
    return check_like_jax(getattr(fnp, name), getattr(jnp, name), *args, rtol=rtol, atol=atol,
                          err_contains=err_contains, **kwargs)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                    ((5, 2, 3), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
                                    ((1, 2, 3), (5, 3, 2)), ((), (3,)), ((2, 3), ())], ids=str)
@pytest.mark.parametrize("name", ["dot", "matmul"])
def test_dot_matmul(name, shapes):
    a, b = rand_array(shapes[0], F32, 1), rand_array(shapes[1], F32, 2)
    check_like_jax(getattr(fnp, name), getattr(jnp, name), a, b, err_contains=(name,),
                   rtol=1e-5, atol=1e-5)


def test_products_dtypes_and_weak():
    a, b = rand_array((2, 3), I32, 1), rand_array((3,), F16, 2)
    both("dot", a, b, rtol=1e-2, atol=1e-2)
    both("matmul", a, b, rtol=1e-2, atol=1e-2)
    both("dot", a, 2.0)
    both("dot", 2, 3.0)
    both("matmul", a.astype(BF16), b.astype(BF16), rtol=2e-2, atol=2e-2)
    both("matmul", rand_array((2, 3), BOOL, 1), rand_array((3, 2), BOOL, 2))
    both("dot", rand_array((2, 3), C64, 1), rand_array((3,), C64, 2), rtol=1e-5, atol=1e-5)
    both("matmul", a, b, preferred_element_type=F32, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("case", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (4, 3, 5), ((1, 2), (1, 0))), ((2, 3), (3, 4), 1),
    ((2, 3), (4, 5), 0), ((2, 3), (3, 2), [[0, 1], [1, 0]]), ((3,), (3,), 1),
], ids=str)
def test_tensordot(case):
    a, b = rand_array(case[0], F32, 1), rand_array(case[1], F32, 2)
    both("tensordot", a, b, case[2], rtol=1e-5, atol=1e-5)
    both("tensordot", a, b, axes=case[2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (4, 3)), ((), (3,)), ((2, 3), ())],
                         ids=str)
def test_inner_outer_vdot(shapes):
    a, b = rand_array(shapes[0], F32, 1), rand_array(shapes[1], F32, 2)
    both("inner", a, b, rtol=1e-5, atol=1e-5)
    both("outer", a, b)
    if a.size == b.size:
        both("vdot", a, b, rtol=1e-5, atol=1e-5)
    c = rand_array((3,), C64, 3)
    both("vdot", c, c, rtol=1e-5, atol=1e-5)


def test_product_errors():
    for name in ("dot", "matmul", "inner"):
        with pytest.raises((TypeError, ValueError)) as info:
            getattr(fnp, name)(np.ones((2, 3), np.float32), np.ones((4,), np.float32))
        msg = str(info.value)
        assert (name in msg or "dot_general" in msg) and "(2, 3)" in msg and "(4,)" in msg, msg
        with pytest.raises(type(info.value)):
            getattr(jnp, name)(np.ones((2, 3), np.float32), np.ones((4,), np.float32))
    check_like_jax(fnp.matmul, jnp.matmul, np.ones(3, np.float32), 2.0)
