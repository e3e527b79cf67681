"""jnp functions given operands of different ranks ((2, 3) with (3,)) or misused arguments,
against jax 0.10.2: the values (shape, dtype, weak type) or the error type. Each case failed
before its fix: divmod's float path selected between unbroadcast operands, matvec/vecmat
broadcast a missing core dimension into a wrong result, modf/outer ignored ``out=``, and split
truncated float indices."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import check_like_jax

import fluxion
import fluxion.numpy as fnp

X = np.array([[1.5, -2.25, 3.0], [-0.5, 4.0, -7.5]], np.float32)
V = np.array([0.75, -1.5, 2.0], np.float32)

CASES = {
    "divmod_xv": lambda m: m.divmod(X, V),
    "divmod_vx": lambda m: m.divmod(V, X),
    "divmod_int": lambda m: m.divmod(X.astype(np.int32), np.array([2, -3, 4], np.int32)),
    "matvec": lambda m: m.matvec(X, V),
    "matvec_vector_first": lambda m: m.matvec(V, X),
    "matvec_scalar": lambda m: m.matvec(X, np.float32(2)),
    "matvec_sizes": lambda m: m.matvec(X, np.ones(4, np.float32)),
    "vecmat": lambda m: m.vecmat(V[:2], X),
    "vecmat_matrix_second": lambda m: m.vecmat(X, V),
    "modf_out": lambda m: m.modf(X, V),
    "outer_out": lambda m: m.outer(X, V, V),
    "split_float": lambda m: m.split(np.arange(5), [1.5]),
    "split_float_array": lambda m: m.split(np.arange(5), np.array([1.5, 3.0])),
    "split_ints": lambda m: m.split(np.arange(5), np.array([1, 3])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_jax(name):
    check_like_jax(lambda: CASES[name](fnp), lambda: CASES[name](jnp))


def test_where_of_python_scalars_stages_no_constants_like_jax():
    # where's operands are promoted without becoming arrays first: Python scalars stay literals
    # in a staged program (an eager array there is a captured constant, which checkify's
    # control-flow rules refuse), as in jax.
    for lib, m in ((fluxion, fnp), (jax, jnp)):
        closed = lib.make_jaxpr(lambda p: m.where(p, 3, 2))(True)
        assert closed.consts == [] and len(closed.jaxpr.constvars) == 0, lib.__name__
        out = lib.jit(lambda p: m.where(p, 3, 2.5))(False)
        assert out.dtype == np.float32 and out.weak_type
