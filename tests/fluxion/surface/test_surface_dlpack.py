"""fluxion.dlpack.from_dlpack against jax.dlpack: NumPy producers (and PyTorch when installed),
dtypes, zero-copy sharing of aligned host memory."""

from __future__ import annotations

import jax
import jax.dlpack
import numpy as np
import pytest
from _compare import assert_same

import fluxion.numpy as jnp
from fluxion import dlpack


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint16", "bool", "complex64", "float64",
                                   "int64"])
def test_from_numpy_like_jax(dtype):
    x = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    assert_same(dlpack.from_dlpack(x), jax.dlpack.from_dlpack(x))


def test_zero_copy_when_aligned_and_copy_true():
    raw = np.empty(64 * 3, np.uint8)
    start = (-raw.ctypes.data) % 64
    x = raw[start:start + 64].view(np.float32)  # 16 float32 on a 64-byte boundary
    x[:] = np.arange(16)
    shared = dlpack.from_dlpack(x)
    assert shared.unsafe_buffer_pointer() == x.ctypes.data
    copied = dlpack.from_dlpack(x, copy=True)
    assert copied.unsafe_buffer_pointer() != x.ctypes.data
    assert_same(copied, jnp.arange(16, dtype=jnp.float32))


def test_round_trip_and_errors():
    a = jnp.arange(5.0)
    assert_same(dlpack.from_dlpack(np.array(a)), a)
    assert dlpack.is_supported_dtype("float32") == jax.dlpack.is_supported_dtype("float32")
    assert dlpack.is_supported_dtype("float8_e4m3fn") == jax.dlpack.is_supported_dtype(
        "float8_e4m3fn")
    with pytest.raises(TypeError, match="__dlpack__"):
        dlpack.from_dlpack([1, 2, 3])


def test_from_torch():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert_same(dlpack.from_dlpack(t), jax.dlpack.from_dlpack(t))
