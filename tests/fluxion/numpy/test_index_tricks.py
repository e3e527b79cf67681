"""fluxion.numpy.index_tricks against jax.numpy: the ``r_`` and ``c_`` concatenators."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from _compare import check_like_jax

import fluxion.numpy as fnp


def _both(case):
    """``case(module)`` with fluxion.numpy and with jax.numpy: equal results, or the same
    exception type."""
    check_like_jax(lambda: case(fnp), lambda: case(jnp), rtol=1e-6, atol=1e-6)


A = np.array([1, 2, 3], np.int32)
B = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)

R_CASES = [
    lambda m: m.r_[1:4, 0, A],
    lambda m: m.r_[0:1:5j],
    lambda m: m.r_[-1:1:6j, [0] * 3, 5, 6],
    lambda m: m.r_[A, A],
    lambda m: m.r_["0,2", [1, 2], [3, 4]],
    lambda m: m.r_["0,2,0", [1, 2], [3, 4]],
    lambda m: m.r_["1,2,0", [1, 2], [3, 4]],
    lambda m: m.r_["0,3,1", [1, 2], [3, 4]],
    lambda m: m.r_["-1", B, B],
    lambda m: m.r_["r", 1:4],
    lambda m: m.r_["c", A, A],
    lambda m: m.r_[B, B],
    lambda m: m.r_[1.5, 2],
    lambda m: m.c_[A, A],
    lambda m: m.c_[B, [5.0, 6.0]],
    lambda m: m.c_[0:3, A],
    lambda m: m.c_[np.ones((2, 2, 2), np.float32), np.zeros((2, 2, 1), np.float32)],
    lambda m: m.c_["0", A, A],
]


@pytest.mark.parametrize("case", range(len(R_CASES)))
def test_r_c(case):
    _both(R_CASES[case])


def test_r_c_errors():
    _both(lambda m: m.r_["bad", A])
    _both(lambda m: m.r_[A, "r"])
    assert len(fnp.r_) == 0 and len(fnp.c_) == 0
