"""``jax.extend.core.mapped_aval`` / ``unmapped_aval`` (equinox's ``create_vprim`` batching
rules use them) compared with JAX 0.10.2's."""

from __future__ import annotations

import jax._src.core as jcore
import jax.extend.core as jex
import numpy as np
import pytest

import fluxion.extend.core as fex
from fluxion.core.avals import ShapedArray
from fluxion.core.refs import AbstractRef


def _both(shape, dtype="float32", weak=False):
    return (ShapedArray(tuple(shape), np.dtype(dtype), weak),
            jcore.ShapedArray(tuple(shape), np.dtype(dtype), weak_type=weak))


def _same(ours, theirs):
    assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype,
                                                          theirs.weak_type)


@pytest.mark.parametrize("shape,size,axis", [
    ((3, 4), 3, 0), ((3, 4), 4, 1), ((2, 3, 4), 3, 1), ((5,), 5, 0),
    ((3, 4), 7, None),
])
@pytest.mark.parametrize("weak", [False, True])
def test_mapped_aval_like_jax(shape, size, axis, weak):
    ours, theirs = _both(shape, weak=weak)
    _same(fex.mapped_aval(size, axis, ours), jex.mapped_aval(size, axis, theirs))


@pytest.mark.parametrize("shape,size,axis", [
    ((3, 4), 5, 0), ((3, 4), 5, 1), ((3, 4), 5, 2), ((), 2, 0), ((3,), 2, None),
])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_unmapped_aval_like_jax(shape, size, axis, dtype):
    ours, theirs = _both(shape, dtype)
    _same(fex.unmapped_aval(size, axis, ours), jex.unmapped_aval(size, axis, theirs))
    if axis is not None:  # the round trip gives the aval back
        _same(fex.mapped_aval(size, axis, fex.unmapped_aval(size, axis, ours)), ours)


def test_mapped_aval_of_a_reference_maps_the_array():
    ref = AbstractRef(ShapedArray((3, 4), np.dtype("float32")))
    out = fex.mapped_aval(3, 0, ref)
    assert isinstance(out, AbstractRef) and out.inner_aval.shape == (4,)
    assert fex.unmapped_aval(2, 1, out).inner_aval.shape == (4, 2)


def test_mapping_errors_like_jax():
    ours, theirs = _both((3, 4))
    for fn in (fex.mapped_aval, jex.mapped_aval):  # wrong size: JAX asserts
        with pytest.raises(AssertionError):
            fn(2, 0, ours if fn is fex.mapped_aval else theirs)
        with pytest.raises(AssertionError):  # negative positions are refused
            fn(3, -2, ours if fn is fex.mapped_aval else theirs)
    for fn, a in ((fex.unmapped_aval, ours), (jex.unmapped_aval, theirs)):
        with pytest.raises(AssertionError):
            fn(3, -1, a)
        with pytest.raises(TypeError):
            fn(3, 1.0, a)
    for fn in (fex.mapped_aval, jex.mapped_aval):
        with pytest.raises(TypeError, match="no mapping handler"):
            fn(3, 0, "x")
