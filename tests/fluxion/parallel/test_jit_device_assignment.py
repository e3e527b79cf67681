"""``Lowered.compile(device_assignment=)`` against jax 0.10.2 (jax/_src/interpreters/pxla.py,
``MeshComputation.compile``): the devices a function was lowered for (its committed arguments',
else the default device's) are the only assignment accepted; the executable runs there; any
other assignment is JAX's ``ValueError``, word for word."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.sharding import NamedSharding
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
from jax.sharding import NamedSharding as JNS  # noqa: E402
from jax.sharding import PartitionSpec as JP  # noqa: E402


def _both(make):
    """``make(lib, devices)`` run for Fluxion and JAX: (ours, theirs), each a value or the
    (type name, message) of what it raised."""
    out = []
    for lib in (fluxion, jax):
        try:
            out.append(make(lib, lib.devices()))
        except (ValueError, TypeError) as e:
            out.append((type(e).__name__, str(e)))
    return out


def _ids(x):
    return sorted(d.id for d in x.devices())


def test_default_device_assignment_is_accepted(eight):
    def make(lib, devs):
        low = lib.jit(lambda x: x + 1).lower(lib.numpy.ones(3))
        y = low.compile(device_assignment=(devs[0],))(lib.numpy.ones(3))
        return np.asarray(y).tolist(), _ids(y)
    ours, theirs = _both(make)
    assert ours == theirs == ([2.0, 2.0, 2.0], [0])


@pytest.mark.parametrize("assignment", [(1,), (0, 1)])
def test_other_devices_are_jaxs_value_error(eight, assignment):
    def make(lib, devs):
        low = lib.jit(lambda x: x * 2).lower(lib.numpy.ones(3))
        return low.compile(device_assignment=tuple(devs[i] for i in assignment))
    ours, theirs = _both(make)
    assert ours[0] == "ValueError" and "must match the device_assignment" in ours[1]
    assert ours == theirs


def test_committed_argument_lowers_for_its_device(eight):
    # jit(f).lower(x) with x committed to device 3 is lowered (and compiled) for device 3
    def make(lib, devs):
        x = lib.device_put(lib.numpy.arange(3.0), devs[3])
        low = lib.jit(lambda v: v - 1).lower(x)
        plain = low.compile()(x)
        named = low.compile(device_assignment=(devs[3],))(x)
        try:
            low.compile(device_assignment=(devs[0],))
            wrong = None
        except ValueError as e:
            wrong = str(e)
        return np.asarray(plain).tolist(), _ids(plain), _ids(named), wrong
    ours, theirs = _both(make)
    assert ours[:3] == ([-1.0, 0.0, 1.0], [3], [3])
    assert ours == theirs


def test_default_device_at_lowering_time(eight):
    # the default device when lowered, not when compiled or called, as in JAX
    def make(lib, devs):
        with lib.default_device(devs[2]):
            low = lib.jit(lambda v: v + 2).lower(lib.numpy.ones(2))
        y = low.compile(device_assignment=(devs[2],))(lib.numpy.ones(2))
        return np.asarray(y).tolist(), _ids(y), _ids(low.compile()(lib.numpy.ones(2)))
    ours, theirs = _both(make)
    assert ours == theirs == ([3.0, 3.0], [2], [2])


def test_multi_device_assignment(eight):
    mesh = fluxion.sharding.Mesh(np.array(fluxion.devices()[:4]), ("x",))
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:4]), ("x",))

    def make(lib, devs):
        m, ns, p = (mesh, NamedSharding, P) if lib is fluxion else (jmesh, JNS, JP)
        x = lib.device_put(lib.numpy.arange(8.0), ns(m, p("x")))
        low = lib.jit(lambda v: v * 3).lower(x)
        y = low.compile(device_assignment=tuple(devs[:4]))(x)
        errors = []
        for bad in (tuple(devs[:4][::-1]), tuple(devs[:2]), (devs[0],)):
            try:
                low.compile(device_assignment=bad)
            except ValueError as e:
                errors.append(str(e))
        return np.asarray(y).tolist(), _ids(y), tuple(y.sharding.spec), errors
    ours, theirs = _both(make)
    assert ours[1] == [0, 1, 2, 3] and len(ours[3]) == 3
    assert ours == theirs


def test_not_a_tuple_of_devices_is_a_type_error(eight):
    low = fluxion.jit(lambda x: x + 1).lower(jnp.ones(2))
    jlow = jax.jit(lambda x: x + 1).lower(jax.numpy.ones(2))
    for bad, jbad in (([fluxion.devices()[0]], [jax.devices()[0]]),
                      (fluxion.devices()[0], jax.devices()[0]), ((), ())):
        with pytest.raises(TypeError, match="tuple of devices"):
            low.compile(device_assignment=bad)
        # JAX rejects each too (its own errors: unhashable list, DeviceList's arguments, an
        # IndexError on the empty tuple)
        with pytest.raises((TypeError, IndexError)):
            jlow.compile(device_assignment=jbad)


def test_shape_dtype_structs_with_shardings_lower_for_them(eight):
    # jit(f).lower(ShapeDtypeStruct(..., sharding=s)) is lowered for s's devices and splits, as
    # JAX's (was: lowered for the default device, and the compiled call then refused the
    # arrays it was lowered for)
    mesh = fluxion.sharding.Mesh(np.array(fluxion.devices()[:4]), ("x",))
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:4]), ("x",))

    def make(lib, devs):
        m, ns, p = (mesh, NamedSharding, P) if lib is fluxion else (jmesh, JNS, JP)
        split = lib.ShapeDtypeStruct((8, 2), np.float32, sharding=ns(m, p("x")))
        plain = lib.ShapeDtypeStruct((2,), np.float32)
        low = lib.jit(lambda a, b: a * 2.0 + b).lower(split, plain)
        text = low.as_text()
        x = lib.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2), ns(m, p("x")))
        y = low.compile(device_assignment=tuple(devs[:4]))(x, np.ones(2, np.float32))
        try:
            low.compile(device_assignment=tuple(devs[:4][::-1]))
            wrong = None
        except ValueError as e:
            wrong = str(e)
        one = lib.ShapeDtypeStruct((3,), np.float32,
                                   sharding=lib.sharding.SingleDeviceSharding(devs[2]))
        low1 = lib.jit(lambda a: a + 1.0).lower(one)
        z = low1.compile(device_assignment=(devs[2],))(lib.device_put(np.zeros(3, np.float32),
                                                                      devs[2]))
        return ("num_partitions = 4" in text, np.asarray(y).tolist(), _ids(y),
                tuple(y.sharding.spec), wrong, np.asarray(z).tolist(), _ids(z))
    ours, theirs = _both(make)
    assert ours[0] and ours[2] == [0, 1, 2, 3] and ours[6] == [2]
    assert ours == theirs


def test_numpy_beside_a_committed_argument_lowers_for_its_device(eight):
    # (was: lowered for the default device when any argument was not an Array)
    def make(lib, devs):
        x = lib.device_put(np.arange(3.0, dtype=np.float32), devs[5])
        low = lib.jit(lambda a, b: a * b).lower(x, np.full(3, 2.0, np.float32))
        y = low.compile(device_assignment=(devs[5],))(x, np.full(3, 2.0, np.float32))
        return np.asarray(y).tolist(), _ids(y)
    ours, theirs = _both(make)
    assert ours == theirs == ([0.0, 2.0, 4.0], [5])


def test_in_shardings_place_stand_ins_and_numpy_values(eight):
    # jit(f, in_shardings=s).lower(ShapeDtypeStruct or NumPy value) is lowered for s (was: for
    # the default device, the in_shardings ignored)
    mesh = fluxion.sharding.Mesh(np.array(fluxion.devices()[:4]), ("x",))
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:4]), ("x",))
    host = np.arange(8.0, dtype=np.float32)

    def make(lib, devs):
        m, ns, p = (mesh, NamedSharding, P) if lib is fluxion else (jmesh, JNS, JP)
        f = lib.jit(lambda v: v * 3.0, in_shardings=ns(m, p("x")))
        out = []
        for arg in (lib.ShapeDtypeStruct((8,), np.float32), host):
            low = f.lower(arg)
            y = low.compile(device_assignment=tuple(devs[:4]))(host)
            out.append((low.as_text().count("num_partitions = 4"), np.asarray(y).tolist(),
                        _ids(y), tuple(y.sharding.spec)))
        return out
    ours, theirs = _both(make)
    assert ours[0][0] == 1 and ours[0][2] == [0, 1, 2, 3]
    assert ours == theirs
