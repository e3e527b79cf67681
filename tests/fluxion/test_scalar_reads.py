"""Scalar reads (``float(x)``, ``int(x)``, ``bool(x)``, ``x.item()``) of 0-d arrays against
jax.numpy 0.10.2 and against the array's own host copy (``np.asarray``): every dtype, the value of
a computation read before it has finished, deleted arrays, and arrays whose reads take the host
copy (other dtypes, several devices). On one CPU device the read goes through the buffer in place
(backend/array.py ``_SCALAR_FORMATS``), so these pin that it returns exactly the copy's value.
"""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp

_VALUES = {
    "float32": [1.5, -0.0, np.inf, 3.4e38, 1e-45], "float64": [2.0 ** -1074, -7.25],
    "float16": [65504.0, -0.5], "int32": [-(2 ** 31), 7], "int64": [-(2 ** 63), 2 ** 40 + 3],
    "int16": [-32768, 12], "int8": [-128, 5], "uint32": [2 ** 32 - 1], "uint64": [2 ** 64 - 1],
    "uint16": [65535], "uint8": [255, 0], "bool": [True, False],
}


@pytest.mark.parametrize("dtype", sorted(_VALUES))
def test_scalar_reads_equal_the_host_copy_and_jax(dtype: str) -> None:
    with fluxion.enable_x64(True):
        for v in _VALUES[dtype]:
            ours = fnp.asarray(np.asarray(v, dtype))
            ours._np = None  # (a host value kept from the transfer would answer the reads)
            host = np.asarray(fnp.asarray(np.asarray(v, dtype)))  # another Array: its copy
            theirs = jnp.asarray(np.asarray(v, dtype)) if "64" not in dtype else None
            for read in (float, int, bool, lambda a: a.item()):
                if read is int and not np.isfinite(float(host)):
                    with pytest.raises(OverflowError):
                        read(ours)
                    continue
                got, want = read(ours), read(host[()])
                assert type(got) is type(want) and (got == want or got != got), (dtype, v)
                if np.signbit(host) and read is float:
                    assert np.signbit(got)
                if theirs is not None and read is not int:
                    assert got == read(theirs) and type(got) is type(read(theirs))
            if fluxion.default_backend() == "cpu":  # the in-place read was the one taken
                assert ours._k.host_read and ours._np is None


def test_scalar_read_waits_for_the_computation() -> None:
    f = fluxion.jit(lambda x: (x @ x).sum())
    x = fnp.ones((400, 400))
    for _ in range(3):
        assert float(f(x)) == 400.0 ** 3
        assert f(x).item() == 400.0 ** 3


def test_scalar_read_of_deleted_array_raises() -> None:
    x = fnp.ones(()) + 1
    x.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        float(x)


def test_scalar_reads_through_the_host_copy() -> None:
    # dtypes outside the table, non-scalar arrays, arrays on several devices
    b = fnp.asarray(1.5, ml_dtypes.bfloat16)
    assert float(b) == 1.5 and b._k.host_read is False
    assert complex(fnp.complex64(1 + 2j)) == 1 + 2j
    assert fnp.ones((1, 1)).item() == 1.0
    devs = fluxion.devices()
    if len(devs) > 1:
        mesh = fluxion.make_mesh((len(devs),), ("x",))
        s = fluxion.device_put(fnp.float32(2.5), fluxion.NamedSharding(mesh, fluxion.P()))
        assert float(s) == 2.5 and s._k.host_read is False
