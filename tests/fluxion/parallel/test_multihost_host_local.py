"""``multihost_utils.host_local_array_to_global_array`` / ``global_array_to_host_local_array``,
``live_devices``, ``ProcessFailureError`` and ``reached_preemption_sync_point`` in one process
of 8 CPU devices, against JAX 0.10.2 in the same process (the two-process run is in
test_parallel_distributed.py): in one process a host-local array on a mesh is the global one."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.experimental import multihost_utils as jmh
from jax.sharding import Mesh as JMesh
from jax.sharding import PartitionSpec as JP

import fluxion
import fluxion.numpy as fnp
from fluxion.experimental import multihost_utils as fmh
from fluxion.sharding import Mesh as FMesh
from fluxion.sharding import PartitionSpec as FP

X = np.arange(32.0, dtype=np.float32).reshape(8, 4)


@pytest.fixture(scope="module")
def meshes(eight):
    if jax.device_count() < 8:
        pytest.skip("the reference jax needs 8 devices too")
    return (FMesh(np.array(fluxion.devices()).reshape(2, 4), ("x", "y")),
            JMesh(np.array(jax.devices()).reshape(2, 4), ("x", "y")))


def _described(a):
    return (tuple(a.shape), str(a.dtype), tuple(a.sharding.spec), a.committed,
            np.asarray(a).tolist())


SPECS = {
    "rows": lambda P: P("x"),
    "both": lambda P: P("x", "y"),
    "flat": lambda P: P(("x", "y")),
    "replicated": lambda P: P(),
    "cols": lambda P: P(None, "y"),
}


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_host_local_to_global_like_jax(meshes, spec):
    fm, jm = meshes
    x = X.reshape(32) if spec == "flat" else X
    ours = fmh.host_local_array_to_global_array(x, fm, SPECS[spec](FP))
    ref = jmh.host_local_array_to_global_array(x, jm, SPECS[spec](JP))
    assert type(ours) is fluxion.Array
    assert _described(ours) == _described(ref)
    assert ours.sharding == fluxion.NamedSharding(fm, SPECS[spec](FP))


def test_pytrees_and_spec_prefixes(meshes):
    fm, jm = meshes
    tree = {"a": X, "b": [np.int32(3), np.ones(4)]}

    def run(mh, m, P, lib):
        g = mh.host_local_array_to_global_array(tree, m, {"a": P("x", "y"), "b": P()})
        return lib.tree_util.tree_map(
            lambda a: (a.shape, str(a.dtype), tuple(a.sharding.spec), np.asarray(a).tolist()), g)
    assert run(fmh, fm, FP, fluxion) == run(jmh, jm, JP, jax)
    one_spec = fmh.host_local_array_to_global_array([X, X], fm, FP("x"))
    assert [tuple(a.sharding.spec) for a in one_spec] == [("x",), ("x",)]
    with pytest.raises(ValueError, match="tree prefix"):
        fmh.host_local_array_to_global_array([X, X], fm, [FP("x")])


def test_global_to_host_local_like_jax(meshes):
    fm, jm = meshes
    g = fmh.host_local_array_to_global_array(X, fm, FP("x"))
    jg = jmh.host_local_array_to_global_array(X, jm, JP("x"))
    # every array of one process is host-local: returned as it is
    assert fmh.global_array_to_host_local_array(g, fm, FP("x")) is g
    assert jmh.global_array_to_host_local_array(jg, jm, JP("x")) is jg
    single = fnp.ones(4)
    assert fmh.global_array_to_host_local_array(single, fm, FP("x")) is single
    # a host value is placed on the mesh
    ours = fmh.global_array_to_host_local_array({"v": X}, fm, FP("x"))["v"]
    ref = jmh.global_array_to_host_local_array({"v": X}, jm, JP("x"))["v"]
    assert tuple(ours.sharding.spec) == tuple(ref.sharding.spec) == ("x",)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))


@pytest.mark.parametrize("fn", ["host_local_array_to_global_array",
                                "global_array_to_host_local_array"])
def test_none_spec_is_jaxs_value_error(meshes, fn):
    fm, jm = meshes
    with pytest.raises(ValueError, match="not a valid input to the pspecs"):
        getattr(jmh, fn)(X, jm, None)
    with pytest.raises(ValueError, match="not a valid input to the pspecs"):
        getattr(fmh, fn)(X, fm, None)
    with pytest.raises(ValueError, match="not a valid input to the pspecs"):
        getattr(fmh, fn)({"a": X, "b": X}, fm, {"a": FP(), "b": None})


def test_under_transformations_like_jax(meshes):
    fm, jm = meshes

    def run(lib, mh, m, P):
        f = lambda a: (mh.host_local_array_to_global_array(a, m, P("x")) ** 2).sum()  # noqa: E731
        h = lambda a: mh.global_array_to_host_local_array(a * 3, m, P("x"))  # noqa: E731
        return (float(lib.jit(f)(X)), np.asarray(lib.grad(f)(X)).tolist(),
                np.asarray(lib.vmap(lambda a: mh.host_local_array_to_global_array(
                    a, m, P("x")) + 1)(np.stack([X, X]))).tolist(),
                np.asarray(lib.jit(h)(X)).tolist())
    assert run(fluxion, fmh, fm, FP) == run(jax, jmh, jm, JP)


def test_key_arrays_and_float0(meshes):
    fm, jm = meshes
    keys = fluxion.random.split(fluxion.random.key(0), 4)
    g = fmh.host_local_array_to_global_array(keys, fm, FP("x"))
    assert fluxion.dtypes.issubdtype(g.dtype, fluxion.dtypes.prng_key) and g.shape == (4,)
    assert tuple(g._base_array.sharding.spec) == ("x",)
    np.testing.assert_array_equal(np.asarray(fluxion.random.key_data(g)),
                                  np.asarray(fluxion.random.key_data(keys)))
    back = fmh.global_array_to_host_local_array(g, fm, FP("x"))
    assert back.dtype == g.dtype
    f0 = np.zeros(4, fluxion.dtypes.float0)
    assert fmh.host_local_array_to_global_array(f0, fm, FP("x")).dtype == np.bool_
    assert jmh.host_local_array_to_global_array(
        np.zeros(4, jax.dtypes.float0), jm, JP("x")).dtype == np.bool_


def test_live_devices_and_preemption_without_distributed():
    for mh, lib in ((fmh, fluxion), (jmh, jax)):
        with pytest.raises(RuntimeError, match="not initialized"):
            with mh.live_devices(lib.devices()):
                pass
        assert mh.reached_preemption_sync_point(0) is False
        e = mh.ProcessFailureError({lib.devices()[0]})
        assert e.failed_devices == {lib.devices()[0]} and str(e).startswith("Devices failed: ")
        assert isinstance(e, Exception) and not isinstance(e, RuntimeError)


def test_names_listed():
    for name in ("host_local_array_to_global_array", "global_array_to_host_local_array",
                 "live_devices", "ProcessFailureError", "reached_preemption_sync_point"):
        assert name in fmh.__all__ and hasattr(jmh, name)
