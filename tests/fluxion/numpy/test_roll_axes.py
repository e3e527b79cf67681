"""``jnp.roll`` with ``axis`` given as any sequence of integers (range, list, tuple, 1-D integer
array), against JAX (jax_md's tpu module rolls over ``range(ndim)``)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as fnp

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.mark.parametrize("axis", [range(2), [0, 1], (1, 0), np.array([0, 1]), np.int64(1), 1])
def test_roll_axis_sequences_match_jax(axis):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    shift = (1, 2) if np.ndim(axis) else 1
    got = fnp.roll(fnp.asarray(x), shift, axis)
    want = jnp.roll(x, shift, axis)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.shape == want.shape and got.dtype == want.dtype and got.weak_type == want.weak_type


def test_roll_axis_not_an_integer_is_an_error():
    with pytest.raises(TypeError, match="roll: axis must be an integer"):
        fnp.roll(fnp.ones((2, 2)), 1, 0.5)
