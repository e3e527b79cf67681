"""``fluxion.experimental.array_serialization`` against ``jax.experimental.array_serialization``:
what one writes the other reads (same TensorStore layout), sharded arrays included."""

import numpy as np
import pytest

import fluxion
from fluxion.experimental.array_serialization import serialization as fser
from fluxion.sharding import NamedSharding
from fluxion.sharding import PartitionSpec as P

pytest.importorskip("tensorstore")
jax = pytest.importorskip("jax")
jser = pytest.importorskip("jax.experimental.array_serialization.serialization")


def test_specs_match_jax(tmp_path):
    p = str(tmp_path / "w")
    assert fser.get_tensorstore_spec(p) == jser.get_tensorstore_spec(p)
    for ocdbt in (True, False):
        for driver in ("zarr", "zarr3"):
            assert (fser.get_tensorstore_spec(p, ocdbt=ocdbt, driver=driver)
                    == jser.get_tensorstore_spec(p, ocdbt=ocdbt, driver=driver))
    for spec in ("gs://b/x", "/tmp/x", {"driver": "zarr3", "kvstore": {"driver": "gcs",
                                                                      "bucket": "b"}}):
        assert fser.is_remote_storage(spec) == jser.is_remote_storage(spec)
    with pytest.raises(ValueError, match="absolute"):
        fser.get_tensorstore_spec("relative/x", ocdbt=True)


def test_sharded_round_trip_both_ways_with_jax(tmp_path, eight):
    mesh = fluxion.make_mesh((4, 2), ("x", "y"))
    jmesh = jax.make_mesh((4, 2), ("x", "y"))
    value = np.arange(32, dtype=np.float32).reshape(8, 4)
    x = fluxion.device_put(value, NamedSharding(mesh, P("x", "y")))
    jx = jax.device_put(value, jax.NamedSharding(jmesh, jax.P("x", "y")))

    # Fluxion writes, JAX reads (and the reverse), with a different sharding on read.
    ours = fluxion.experimental.array_serialization.serialization.GlobalAsyncCheckpointManager()
    done = []
    ours.serialize_with_paths([x], [str(tmp_path / "a")], on_commit_callback=lambda: done.append(1))
    ours.wait_until_finished()
    assert done == [1]
    theirs = jser.GlobalAsyncCheckpointManager()
    theirs.serialize_with_paths([jx], [str(tmp_path / "b")])
    theirs.wait_until_finished()

    read_j = theirs.deserialize_with_paths([jax.NamedSharding(jmesh, jax.P("y"))],
                                           [str(tmp_path / "a")])[0]
    read_f = ours.deserialize_with_paths([NamedSharding(mesh, P(None, "x"))],
                                         [str(tmp_path / "b")])[0]
    np.testing.assert_array_equal(np.asarray(read_j), value)
    np.testing.assert_array_equal(np.asarray(read_f), value)
    assert read_f.sharding == NamedSharding(mesh, P(None, "x"))
    assert read_f.dtype == read_j.dtype == np.float32


def test_deserialize_pads_to_a_larger_shape_and_casts_like_jax(tmp_path):
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    spec = fser.get_tensorstore_spec(str(tmp_path / "c"), driver="zarr3")
    fser.run_serialization([fluxion.numpy.asarray(value)], [spec])
    s = fluxion.sharding.SingleDeviceSharding(fluxion.devices()[0])
    js = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    ours = fser.run_deserialization([s], [spec], global_shapes=[(3, 4)], dtypes=[np.int32])[0]
    ref = jser.run_deserialization([js], [dict(spec)], global_shapes=[(3, 4)],
                                   dtypes=[np.int32])[0]
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
