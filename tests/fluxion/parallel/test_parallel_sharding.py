"""``fluxion.sharding`` (Mesh, NamedSharding, PartitionSpec, make_mesh, set_mesh), ``device_put``
with shardings, ``addressable_shards`` and ``make_array_from_*``, against real JAX."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fluxion
from fluxion.sharding import NamedSharding
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
from jax.sharding import NamedSharding as JNS  # noqa: E402
from jax.sharding import PartitionSpec as JP

SPECS = [(), ("x",), ("x", "y"), ("y", "x"), (None, "y"), (("x", "y"),), (None, ("y", "x"))]


def _shard_table(arr):
    return sorted((s.device.id, tuple((sl.start, sl.stop) for sl in s.index), s.replica_id,
                   tuple(s.data.shape)) for s in arr.addressable_shards)


def _spec(s):
    parts = list(s)
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)


@pytest.fixture(scope="module")
def meshes(eight):
    return fluxion.make_mesh((4, 2), ("x", "y")), jax.make_mesh((4, 2), ("x", "y"))


def test_make_mesh_like_jax(meshes):
    m, jm = meshes
    assert m.shape == dict(jm.shape) and m.axis_names == jm.axis_names
    assert [t.name for t in m.axis_types] == [t.name for t in jm.axis_types] == ["Explicit"] * 2
    np.testing.assert_array_equal(m.device_ids, jm.device_ids)
    assert repr(P("x", None)) == repr(JP("x", None)) and repr(P()) == repr(JP())
    with pytest.raises(ValueError, match="needs 16 devices"):
        fluxion.make_mesh((4, 4), ("x", "y"))


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_device_put_shards_like_jax(meshes, spec):
    m, jm = meshes
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    x = fluxion.device_put(a, NamedSharding(m, P(*spec)))
    jx = jax.device_put(a, JNS(jm, JP(*spec)))
    assert _shard_table(x) == _shard_table(jx)
    assert x.committed and x.is_fully_replicated == jx.is_fully_replicated
    assert x.sharding.shard_shape(a.shape) == jx.sharding.shard_shape(a.shape)
    np.testing.assert_array_equal(np.asarray(x), a)
    for s in x.addressable_shards:
        np.testing.assert_array_equal(np.asarray(s.data), a[s.index])


def test_device_put_pytree_and_prefix(meshes):
    m, _ = meshes
    tree = {"a": np.ones((8, 2), np.float32), "b": np.zeros(4, np.int32)}
    out = fluxion.device_put(tree, {"a": NamedSharding(m, P("x")), "b": NamedSharding(m, P())})
    assert out["a"].sharding.spec == P("x") and out["b"].sharding.is_fully_replicated
    same = fluxion.device_put(tree, NamedSharding(m, P()))
    assert all(v.sharding.is_fully_replicated for v in same.values())


def test_set_mesh_and_bare_spec(meshes):
    m, _ = meshes
    assert fluxion.sharding.get_mesh() is None
    with fluxion.set_mesh(m):
        assert fluxion.sharding.get_mesh() is m
        x = fluxion.device_put(np.ones((8, 2), np.float32), P("x"))
        assert x.sharding == NamedSharding(m, P("x"))
    assert fluxion.sharding.get_mesh() is None
    with pytest.raises(ValueError, match="needs a mesh"):
        fluxion.device_put(np.ones(8), P("x"))


def test_sharding_errors(meshes):
    m, _ = meshes
    with pytest.raises(ValueError, match="does not divide 6"):
        fluxion.device_put(np.ones((6, 2)), NamedSharding(m, P("x")))
    with pytest.raises(ValueError, match="axis name 'z'"):
        NamedSharding(m, P("z"))
    with pytest.raises(ValueError, match="rank 1"):
        fluxion.device_put(np.ones(8), NamedSharding(m, P("x", "y")))
    with pytest.raises(TypeError, match="PartitionSpec"):
        NamedSharding(m, ("x",))


def test_make_array_from_callback_like_jax(meshes):
    m, jm = meshes
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    x = fluxion.make_array_from_callback(a.shape, NamedSharding(m, P("x", "y")), lambda i: a[i])
    jx = jax.make_array_from_callback(a.shape, JNS(jm, JP("x", "y")), lambda i: a[i])
    assert _shard_table(x) == _shard_table(jx)
    np.testing.assert_array_equal(np.asarray(x), a)


def test_make_array_from_single_device_arrays(meshes):
    m, _ = meshes
    s = NamedSharding(m, P("x"))
    a = np.arange(16, dtype=np.int32).reshape(8, 2)
    idx = s.devices_indices_map(a.shape)
    singles = [fluxion.device_put(a[idx[d]], d) for d in m.devices.flat]
    x = fluxion.make_array_from_single_device_arrays(a.shape, s, singles)
    np.testing.assert_array_equal(np.asarray(x), a)
    assert x.sharding == s
    np.testing.assert_array_equal(np.asarray(x + 1), a + 1)
    with pytest.raises(ValueError, match="shape"):
        fluxion.make_array_from_single_device_arrays((16, 2), s, singles)


def test_make_array_from_process_local_data(meshes):
    m, _ = meshes
    a = np.arange(24, dtype=np.float32).reshape(8, 3)
    x = fluxion.make_array_from_process_local_data(NamedSharding(m, P("x")), a)
    assert x.shape == a.shape and x.sharding.spec == P("x")
    np.testing.assert_array_equal(np.asarray(x), a)


def test_visualize_and_inspect(meshes, capsys):
    m, _ = meshes
    x = fluxion.device_put(np.ones((8, 4), np.float32), NamedSharding(m, P("x", "y")))
    fluxion.sharding.visualize_array_sharding(x)
    text = capsys.readouterr().out
    assert text.count("CPU") == 8 and "CPU 7" in text
    seen = []
    fluxion.sharding.inspect_array_sharding(x, callback=seen.append)
    assert seen == [x.sharding]


def test_reshard_eager(meshes):
    m, _ = meshes
    x = fluxion.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2),
                           NamedSharding(m, P("x")))
    y = fluxion.reshard(x, NamedSharding(m, P(None, "y")))
    assert y.sharding.spec == P(None, "y")
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


def test_debug_namespace_reexports_the_sharding_inspectors() -> None:
    # JAX users reach these through jax.debug.
    import fluxion.debug
    import fluxion.sharding

    assert fluxion.debug.visualize_array_sharding is fluxion.sharding.visualize_array_sharding
    assert fluxion.debug.inspect_array_sharding is fluxion.sharding.inspect_array_sharding
    assert {"visualize_array_sharding", "inspect_array_sharding"} <= set(fluxion.debug.__all__)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class and the message are compared
        return e
    raise AssertionError("no error")


# a spec naming a mesh axis twice, where a user meets it: jax's DuplicateSpecError (an Exception,
# not a ValueError) with jax's message
DUPLICATES = {
    "named_sharding": lambda L, m, x: L.sharding.NamedSharding(m, L.P("x", "x")),
    "in_a_tuple": lambda L, m, x: L.sharding.NamedSharding(m, L.P(("x", "y"), "x")),
    "two_axes": lambda L, m, x: L.sharding.NamedSharding(m, L.P(("x", "y"), ("y", "x"))),
    "device_put": lambda L, m, x: L.device_put(x, L.sharding.NamedSharding(m, L.P("x", "x"))),
    "jit_reshard": lambda L, m, x: L.jit(lambda a: L.sharding.reshard(
        a, L.sharding.NamedSharding(m, L.P("x", "x"))))(x),
}


@pytest.mark.parametrize("name", sorted(DUPLICATES))
def test_duplicate_spec_error_like_jax(meshes, name):
    x = np.ones((8, 4), np.float32)
    ours, theirs = (_error(lambda: DUPLICATES[name](L, m, x))
                    for L, m in zip((fluxion, jax), meshes))
    assert type(ours).__name__ == type(theirs).__name__ == "DuplicateSpecError"
    assert not isinstance(ours, ValueError) and not isinstance(theirs, ValueError)
    assert str(ours) == str(theirs)
    assert ours.pspec == P(*theirs.pspec)


def test_reshard_onto_auto_axes_errors_like_jax(eight):
    x = np.ones((8, 2), np.float32)
    for wrap in (lambda f: f, "jit"):
        errs = []
        for L in (fluxion, jax):
            m = L.make_mesh((2, 4), ("x", "y"), axis_types=(L.sharding.AxisType.Auto,) * 2)
            f = (lambda a, L=L, m=m: L.sharding.reshard(a, L.sharding.NamedSharding(m, L.P("x"))))
            errs.append(_error(lambda L=L, f=f: (L.jit(f) if wrap == "jit" else f)(x)))
        assert all(isinstance(e, ValueError) for e in errs)
        # the same source line and column for both: the messages are equal word for word
        assert str(errs[0]) == str(errs[1])
        assert "of type: AxisType.Auto. This error occurs at source:  " in str(errs[0])


def test_abstract_mesh_and_device_like_jax(meshes):
    from jax.sharding import AbstractDevice as JAD
    from jax.sharding import AbstractMesh as JAM

    from fluxion.sharding import AbstractDevice, AbstractMesh
    m, jm = meshes
    assert repr(m.abstract_mesh) == repr(jm.abstract_mesh)
    assert repr(m.abstract_mesh.abstract_device) == repr(jm.abstract_mesh.abstract_device)
    assert m.abstract_mesh.abstract_mesh is m.abstract_mesh
    kinds = fluxion.sharding.AxisType.Explicit, jax.sharding.AxisType.Explicit
    for Mesh, Dev, kind in ((AbstractMesh, AbstractDevice, kinds[0]), (JAM, JAD, kinds[1])):
        dev = Dev(device_kind="TPU v5 lite", num_cores=1, platform="tpu")
        am = Mesh((2, 4), ("x", "y"), (kind, kind), abstract_device=dev)
        bare = Mesh((2, 4), ("x", "y"), (kind, kind))
        empty = Mesh((), ())
        got = (repr(dev), repr(am), repr(bare), repr(empty), dev == Dev("TPU v5 lite", 1, "tpu"),
               am == bare, bare == Mesh((2, 4), ("x", "y"), (kind, kind)), am.size, empty.size,
               empty.empty, bare.abstract_device, list(am.shape.items()),
               repr(am.update(axis_sizes=(4, 2))), repr(bare.update_axis_types({"y": kind})))
        if Mesh is AbstractMesh:
            ours = got
        else:
            assert ours == got
        for attr in ("devices", "device_ids", "local_devices", "local_mesh", "is_multi_process"):
            with pytest.raises(ValueError, match=f"AbstractMesh does not implement {attr}$"):
                getattr(am, attr)
        with pytest.raises(ValueError, match="AbstractMesh does not implement __enter__"):
            with am:
                pass
        with pytest.raises(dataclasses.FrozenInstanceError):
            dev.platform = "cpu"


def test_use_abstract_mesh_like_jax(meshes):
    m, jm = meshes
    for L, mesh in ((fluxion, m), (jax, jm)):
        S = L.sharding
        am = S.AbstractMesh((2, 4), ("a", "b"))
        assert S.get_abstract_mesh() == S.AbstractMesh((), ())
        with S.use_abstract_mesh(am):
            assert S.get_abstract_mesh() is am
            with S.use_abstract_mesh(S.AbstractMesh((8,), ("c",))):
                assert S.get_abstract_mesh().axis_names == ("c",)
            assert S.get_abstract_mesh() is am
            with pytest.raises(ValueError) as e:
                with S.use_abstract_mesh(S.AbstractMesh((4,), ("c",))):
                    pass
            assert str(e.value) == (
                "use_abstract_mesh cannot change the size of the mesh. Got new mesh: "
                "AbstractMesh('c': 4, axis_types=(Auto,)) with size=4 and prev mesh: "
                "AbstractMesh('a': 2, 'b': 4, axis_types=(Auto, Auto)) with size=8")
            assert S.get_abstract_mesh() is am
        with L.set_mesh(mesh):
            with S.use_abstract_mesh(am):
                assert S.get_abstract_mesh() is am
            assert S.get_abstract_mesh() == mesh.abstract_mesh
        with pytest.raises(ValueError, match="Expected mesh of type `jax.sharding.AbstractMesh`"):
            S.use_abstract_mesh(mesh)
