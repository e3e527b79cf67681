"""``fluxion.experimental.colocated_python`` against ``jax.experimental.colocated_python`` (a
single host: the colocated CPU devices are the local ones, the function runs in-process after
the serialization round trip)."""

import threading

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion.experimental import colocated_python as fcp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jcp = pytest.importorskip("jax.experimental.colocated_python")


def _both(build):
    """Run ``build(lib, numpy, colocated_python)`` on Fluxion and on JAX."""
    return build(fluxion, fnp, fcp), build(jax, jnp, jcp)


def _same(a, b):
    la, lb = fluxion.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_function_runs_on_the_arguments_devices_and_reuses_discovered_specs():
    def build(lib, np_, cp):
        cpu = cp.colocated_cpu_devices(lib.local_devices()[:1])
        assert [d.platform for d in cpu] == ["cpu"]
        seen = []

        @cp.colocated_python
        def f(x, *, y):
            seen.append(x.shape)
            return {"sum": x + y, "cast": x.astype(np_.float32)}

        x = lib.device_put(np_.arange(3), cpu[0])
        first, again = f(x, y=x), f(x, y=x)
        other = f(np_.ones(2, np_.int32), y=np_.ones(2, np_.int32))
        assert first["sum"].sharding.device_set == {cpu[0]}
        return first, again, other

    _same(*_both(build))


def test_specialize_out_specs_fn_devices_and_errors_like_jax():
    def build(lib, np_, cp):
        f = cp.colocated_python(lambda x: (x * 2, x.sum()))
        g = f.specialize(out_specs_fn=lambda x: (
            x, lib.ShapeDtypeStruct((), x.dtype, sharding=x.sharding)))
        with pytest.raises(ValueError, match="out_specs_fn already specified"):
            g.specialize(out_specs_fn=lambda x: x)
        h = cp.colocated_python(lambda: np_.zeros((2,), np_.float32))
        with pytest.raises(ValueError, match="No devices found"):
            h()
        h = h.specialize(devices=lib.local_devices()[:1])
        return g(np_.arange(4.0)), h()

    _same(*_both(build))


def test_class_object_is_built_once_on_first_call_and_methods_run_there():
    def build(lib, np_, cp):
        made = []

        @cp.colocated_python_class
        class Acc:
            def __init__(self, k):
                made.append(k)
                self.total = np_.zeros(2, np_.float32) + k

            def add(self, x):
                self.total = self.total + x
                return self.total

        acc = Acc(1.0)
        assert type(acc).__name__ == "Acc"
        out = [acc.add(np_.ones(2, np_.float32)) for _ in range(3)]
        return out

    _same(*_both(build))


def test_bad_inputs_are_clear_errors():
    f = fcp.colocated_python(lambda x: x)
    with pytest.raises(ValueError, match="only supports jax.Array"):
        f(np.ones(2))
    with pytest.raises(TypeError, match="under a transformation"):
        fluxion.jit(f)(fnp.ones(2))
    lock = threading.Lock()
    g = fcp.colocated_python(lambda x: x if lock else x)  # a lock cannot be serialized
    with pytest.raises(TypeError):
        g(fnp.ones(2))
    spec = fcp.colocated_python(lambda x: x + 1).specialize(
        in_specs=((fluxion.ShapeDtypeStruct((2,), np.float32),), {}))
    with pytest.raises(ValueError, match="leaf 0 has shape"):
        spec(fnp.ones(3))


def test_serialization_round_trips_meshes_and_shardings():
    from fluxion.experimental.colocated_python import serialization as ser
    from fluxion.sharding import Mesh, NamedSharding
    from fluxion.sharding import PartitionSpec as P
    mesh = Mesh(np.array(fluxion.local_devices()[:1]), ("x",))
    s = NamedSharding(mesh, P("x"))
    back = ser._deserialize(ser._serialize((mesh, s, s.mesh._internal_device_list)))
    assert back[0] == mesh and back[1] == s and tuple(back[2]) == tuple(mesh.devices.flat)
