"""``lax.shape_as_value`` against jax 0.10.2: the array type, dtype (int32, int64 past int32's
range) and values for empty, small and huge shapes, eagerly and under jit, and the error for a
dimension that is not an integer."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import assert_same

import fluxion
from fluxion import lax


@pytest.mark.parametrize("shape", [(2, 3), (5,), (np.int32(4), 2**31 - 1), (2**31,), (2**40, 1)])
def test_shape_as_value_like_jax(shape):
    ours, theirs = lax.shape_as_value(shape), jax.lax.shape_as_value(shape)
    assert type(ours) is type(theirs) is np.ndarray  # a constant, as jax's
    assert ours.dtype == theirs.dtype and ours.tolist() == theirs.tolist()


def test_empty_shape_is_an_empty_array_like_jax():
    ours, theirs = lax.shape_as_value(()), jax.lax.shape_as_value(())
    assert isinstance(ours, fluxion.Array)
    assert_same(ours, theirs)
    assert_same(fluxion.jit(lambda: lax.shape_as_value(()))(),
                jax.jit(lambda: jax.lax.shape_as_value(()))())


def test_under_jit_and_errors_like_jax():
    x = np.zeros((2, 3), np.float32)
    assert_same(fluxion.jit(lambda x: lax.shape_as_value(x.shape))(x),
                jax.jit(lambda x: jax.lax.shape_as_value(x.shape))(x))
    for lib in (fluxion, jax):
        with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
            lib.lax.shape_as_value((2.5,))
