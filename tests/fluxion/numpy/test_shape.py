"""fluxion.numpy.shape against jax.numpy: reshape, transpose, squeeze, expand_dims,
concatenate, stack, broadcasting, where, and their errors.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same, check_like_jax, rand_array

import fluxion
import fluxion.numpy as fnp

F32, I32, BOOL = (np.dtype(t) for t in ("float32", "int32", "bool"))


def both(name: str, *args, rtol=None, atol=None, err_contains=(), **kwargs):
    """Call fnp.<name> and jnp.<name> with the same arguments and compare."""
    return check_like_jax(getattr(fnp, name), getattr(jnp, name), *args, rtol=rtol, atol=atol,
                          err_contains=err_contains, **kwargs)


SX = rand_array((2, 3, 4), F32, 4)


@pytest.mark.parametrize("case", [
    ("reshape", (SX, (6, 4))), ("reshape", (SX, (-1,))), ("reshape", (SX, (4, -1))),
    ("reshape", (SX, 24)), ("transpose", (SX,)), ("transpose", (SX, (1, 0, 2))),
    ("transpose", (SX, (-1, 0, 1))), ("squeeze", (SX[:1],)), ("squeeze", (SX[:1, :, :1], 2)),
    ("squeeze", (SX[:1], (0,))), ("expand_dims", (SX, 0)), ("expand_dims", (SX, -1)),
    ("expand_dims", (SX, (0, 2))), ("ravel", (SX,)), ("concatenate", ([SX, SX],)),
    ("concatenate", ([SX, SX], 2)), ("concatenate", ([SX, SX], None)),
    ("concatenate", ([SX[0], np.ones((3, 2), np.float32)], -1)), ("stack", ([SX, SX],)),
    ("stack", ([SX, SX], -1)), ("stack", ([1.0, 2.0],)), ("broadcast_to", (SX[0, 0], (3, 4))),
    ("moveaxis", (SX, 0, -1)), ("swapaxes", (SX, 0, 2)), ("atleast_2d", (SX[0, 0],)),
    ("hstack", ([SX[0], SX[1]],)), ("vstack", ([SX[0], SX[1]],)), ("flip", (SX, 1)),
    ("concatenate", ([np.ones(2, np.int32), np.ones(2, np.float32)],)),
    ("shape", (SX,)), ("ndim", (SX,)), ("size", (SX,)),
], ids=lambda c: c[0])
def test_shape_functions(case):
    name, args = case
    ours, theirs = getattr(fnp, name)(*args), getattr(jnp, name)(*args)
    if isinstance(theirs, (int, tuple)):
        assert ours == theirs
    else:
        assert_same(ours, theirs)


@pytest.mark.parametrize("case", [
    ("reshape", (SX, (5, 5))), ("reshape", (SX, (-1, -1))), ("transpose", (SX, (0, 1))),
    ("squeeze", (SX, 0)), ("expand_dims", (SX, 4)), ("concatenate", ([SX, SX[0]],)),
    ("stack", ([SX, SX[0]],)), ("broadcast_to", (SX, (3, 4))), ("concatenate", ([],)),
], ids=lambda c: c[0])
def test_shape_function_errors(case):
    name, args = case
    e = check_like_jax(getattr(fnp, name), getattr(jnp, name), *args)
    assert isinstance(e, Exception)


@pytest.mark.parametrize("case", [
    ((2, 3), (2, 3), (2, 3)), ((2, 3), (), ()), ((3,), (2, 3), ()), ((2, 1), (1, 3), (3,)),
    ((), (), ()),
], ids=str)
def test_where(case):
    c = rand_array(case[0], BOOL, 1)
    x, y = rand_array(case[1], F32, 2), rand_array(case[2], I32, 3)
    both("where", c, x, y)
    both("where", c, 1.0, 2)
    both("where", c, x, 0)
    check_like_jax(fluxion.jit(fnp.where), jax.jit(jnp.where), c, x, y)
    both("where", rand_array(case[0], F32, 4), x, 1.5)  # non-bool condition


def _both(case):
    """``case(module)`` with fluxion.numpy and with jax.numpy: equal results, or the same
    exception type."""
    check_like_jax(lambda: case(fnp), lambda: case(jnp), rtol=1e-6, atol=1e-6)


CONCATENATE_CASES = [
    lambda m: m.concatenate([[1, 2], [3]]),
    lambda m: m.concatenate([m.array([1, 2]), [3]]),
    lambda m: m.concatenate((np.array([1, 2]), np.array([3]))),
]


@pytest.mark.parametrize("case", range(len(CONCATENATE_CASES)))
def test_concatenate_lists(case):
    _both(CONCATENATE_CASES[case])


def test_permute_dims_requires_axes_like_jax():
    x = np.zeros((2, 3, 4), np.float32)
    check_like_jax(lambda a: fnp.permute_dims(a, (2, 0, 1)), lambda a: jnp.permute_dims(a, (2, 0, 1)), x)
    check_like_jax(fnp.permute_dims, jnp.permute_dims, x, err_contains=("axes",))
