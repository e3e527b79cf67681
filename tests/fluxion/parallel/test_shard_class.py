"""``fluxion.Shard`` against ``jax.Shard`` (jax 0.10.2): JAX's constructor ``(device, sharding,
global_shape, data=None)``, index and replica id computed from the sharding, the repr, and the
shards ``Array.addressable_shards`` gives."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp


def _meshes():
    return (fluxion.make_mesh((2, 2), ("x", "y"), devices=fluxion.devices()[:4]),
            jax.make_mesh((2, 2), ("x", "y"), devices=jax.devices()[:4]))


@pytest.mark.parametrize("spec", [("x", "y"), ("x",), (None, "y"), ()])
def test_addressable_shards_as_jax(spec) -> None:
    mesh, jmesh = _meshes()
    a = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    x = fluxion.device_put(a, fluxion.NamedSharding(mesh, fluxion.P(*spec)))
    y = jax.device_put(a, jax.NamedSharding(jmesh, jax.P(*spec)))
    ours, theirs = x.addressable_shards, y.addressable_shards
    assert all(isinstance(s, fluxion.Shard) for s in ours)
    assert [(s.device.id, s.index, s.replica_id) for s in ours] == \
        [(s.device.id, s.index, s.replica_id) for s in theirs]
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(o.data), np.asarray(t.data))
        assert repr(o).split("data=")[0] == repr(t).split("data=")[0]


def test_constructor_as_jax() -> None:
    mesh, jmesh = _meshes()
    sh = fluxion.NamedSharding(mesh, fluxion.P(None, "y"))
    jsh = jax.NamedSharding(jmesh, jax.P(None, "y"))
    for i in range(4):
        ours = fluxion.Shard(fluxion.devices()[i], sh, (4, 6))
        theirs = jax.Shard(jax.devices()[i], jsh, (4, 6))
        assert (ours.index, ours.replica_id) == (theirs.index, theirs.replica_id)
        assert ours.data is None and theirs.data is None
        assert repr(ours) == repr(theirs)
    x = fnp.ones(3)
    s = fluxion.Shard(fluxion.devices()[0], x.sharding, x.shape, x)
    assert s.data is x and s.index == (slice(None),) and s.replica_id == 0
    bad = fluxion.Shard(fluxion.devices()[0], object(), (3,))
    with pytest.raises(ValueError, match="Cannot calculate indices from sharding"):
        _ = bad.index
    with pytest.raises(ValueError, match="Cannot calculate indices from sharding"):
        _ = jax.Shard(jax.devices()[0], object(), (3,)).index
    assert repr(bad).startswith("Shard(device=") and "index" not in repr(bad)
