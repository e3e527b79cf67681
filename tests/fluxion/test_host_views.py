"""Host reads (``np.asarray(x)``, ``tolist``) of arrays on one CPU device view the buffer through
the buffer protocol (backend/array.py ``host_viewable``): each dtype it covers gives exactly the
buffer's own host copy (``dispatch._copy_to_numpy``) and jax.numpy's value, with the same dtype and
shape, read-only, and alive after the array is deleted; other dtypes and several devices copy.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion.backend import dispatch

_DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "bool", "complex64", "complex128"]

pytestmark = pytest.mark.skipif(fluxion.default_backend() != "cpu", reason="CPU buffers only")


def _host(dtype: str) -> np.ndarray:
    base = np.array([[0, 1, 2], [3, 4, 5]])
    if dtype == "bool":
        return base % 2 == 1
    if dtype.startswith("complex"):
        return (base - 0.5j * base).astype(dtype)
    return base.astype(dtype)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_host_view_equals_the_copy_and_jax(dtype: str) -> None:
    with fluxion.enable_x64(True), jax.enable_x64(True):
        h = _host(dtype)
        for f, g in ((lambda a: a, lambda a: a), (lambda a: a.T, lambda a: a.T),
                     (lambda a: a[1, 2], lambda a: a[1, 2])):
            x = fluxion.jit(f)(fnp.asarray(h))
            got = np.asarray(x)
            assert x._k.host_view is True
            want = dispatch._copy_to_numpy(x)
            ref = np.asarray(jax.jit(g)(jnp.asarray(h)))
            for other in (want, ref):
                assert got.dtype == other.dtype and got.shape == other.shape, (dtype, other)
                np.testing.assert_array_equal(got, other)
            assert not got.flags.writeable
            assert x.tolist() == ref.tolist()


def test_host_view_outlives_the_array_and_cannot_write() -> None:
    x = fnp.arange(6.0).reshape(2, 3) * 2
    v = np.asarray(x)
    x.delete()
    assert v.tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    with pytest.raises(ValueError):
        v[0, 0] = 1.0
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)
    c = np.asarray(fnp.ones(3), copy=True)
    c[0] = 5.0  # an explicit copy is writable
    assert c.tolist() == [5.0, 1.0, 1.0]


def test_dtypes_outside_the_buffer_protocol_copy() -> None:
    h = np.array([1.0, -2.5, 3.0], ml_dtypes.bfloat16)
    x = fnp.asarray(h) * 1
    got = np.asarray(x)
    assert x._k.host_view is False
    assert got.dtype == np.dtype(ml_dtypes.bfloat16) and not got.flags.writeable
    np.testing.assert_array_equal(got.astype(np.float32), (jnp.asarray(h) * 1).astype(np.float32))
