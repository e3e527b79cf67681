"""Eager ``jnp`` calls run as one compiled program (backend/fused.py) also after an Explicit mesh
has been used in the process: only while a ``set_mesh`` mesh with Explicit axes is active, or for
operands whose types carry a sharding, do they run op by op. Results, dtypes, weak types and
sharding types against JAX, and bit-equality where one program and op by op round differently."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_bits_equal, assert_same
from jax.sharding import AxisType as JT
from jax.sharding import NamedSharding as JNS
from jax.sharding import PartitionSpec as JP

import fluxion
import fluxion.numpy as fnp
from fluxion.core import avals
from fluxion.sharding import AxisType, NamedSharding, PartitionSpec


@pytest.fixture(scope="module")
def explicit():
    if fluxion.device_count() < 4:
        pytest.skip("needs 4 devices (tests/conftest.py forces 8 host devices)")
    m = fluxion.make_mesh((2, 2), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    jm = jax.make_mesh((2, 2), ("a", "b"), axis_types=(JT.Explicit,) * 2)
    a = np.arange(8, dtype=np.float32).reshape(4, 2) / 7
    x = fluxion.device_put(a, NamedSharding(m, PartitionSpec("a", "b")))
    jx = jax.device_put(a, JNS(jm, JP("a", "b")))
    assert avals.EXPLICIT[0]  # a sharded type exists in this process from here on
    return m, jm, x, jx


def _one_program_calls() -> int:
    from fluxion.backend import fused
    return sum(1 for t in fused._TABLES.values() for e in t.values() if e is not fused._OP_BY_OP)


def test_eager_calls_are_one_program_again_outside_the_mesh(explicit):
    # jnp.round of Python numbers: one program rounds once (JAX's bits); op by op, twice
    before = _one_program_calls()
    assert_bits_equal(fnp.round(3.14159, 2), jnp.round(3.14159, 2))
    assert_bits_equal(fnp.round(2.675, 2), jnp.round(2.675, 2))
    assert _one_program_calls() > before
    x = np.array([0, 1, 3.7, 1e-3, 7, 1000, 0.1], np.float16)
    assert_bits_equal(fnp.log2(x), jnp.log2(x))  # float16 rounds between ops op by op
    # nan * False is 0 in one program (XLA's select), as under JAX's jitted jnp.multiply
    assert_same(fnp.multiply(fnp.array([np.nan, 1.0]), fnp.array([False, True])),
                jnp.multiply(jnp.array([np.nan, 1.0]), jnp.array([False, True])))


def test_sharded_operands_and_the_explicit_context_keep_their_types(explicit):
    m, jm, x, jx = explicit
    got, want = fnp.round(x, 2), jnp.round(jx, 2)
    assert str(fluxion.typeof(got)) == str(jax.typeof(want)) == "float32[4@a,2@b]"
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with fluxion.set_mesh(m), jax.set_mesh(jm):
        for f, j in ((fnp.multiply(np.ones(2, np.float32), 2.0),
                      jnp.multiply(np.ones(2, np.float32), 2.0)),
                     (fnp.round(np.float32(3.14159), 2), jnp.round(np.float32(3.14159), 2)),
                     (fnp.sum(x * 2), jnp.sum(jx * 2))):
            assert str(fluxion.typeof(f)) == str(jax.typeof(j))
            assert f.weak_type == j.weak_type and f.dtype == j.dtype
            np.testing.assert_allclose(np.asarray(f), np.asarray(j), rtol=1e-6)
    assert_same(fnp.multiply(np.ones(2, np.float32), 2.0), jnp.multiply(np.ones(2, np.float32), 2.0))
